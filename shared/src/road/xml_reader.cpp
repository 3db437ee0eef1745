#include "xml_reader.hpp"

#include <cstdint>

namespace platoon::road::xml {
namespace {

bool NameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool NameChar(char c) { return NameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }
bool Space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  Element Document() {
    // Optional UTF-8 byte order mark.
    if (s_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;
    if (s_.compare(pos_, 5, "<?xml") == 0 && pos_ + 5 < s_.size() && Space(s_[pos_ + 5])) Declaration();
    Misc();
    if (AtEnd()) Fail("the document has no root element");
    if (s_[pos_] != '<' || pos_ + 1 >= s_.size() || !NameStart(s_[pos_ + 1]))
      Fail("expected the root element's start tag '<name'");
    Element root = ElementAt();
    Misc();
    if (!AtEnd()) Fail("content after the root element's end tag");
    return root;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const { FailAt(line_, what); }
  [[noreturn]] void FailAt(int line, const std::string& what) const {
    throw XmlError(source_ + ":" + std::to_string(line) + ": " + what);
  }

  bool AtEnd() const { return pos_ >= s_.size(); }
  bool StartsWith(const char* lit) const { return s_.compare(pos_, std::char_traits<char>::length(lit), lit) == 0; }

  void Advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i, ++pos_)
      if (s_[pos_] == '\n') ++line_;
  }

  void SkipSpace() {
    while (!AtEnd() && Space(s_[pos_])) Advance(1);
  }

  void Expect(char c, const std::string& what) {
    if (AtEnd() || s_[pos_] != c) Fail("expected " + what);
    Advance(1);
  }

  std::string Name(const char* what) {
    if (AtEnd() || !NameStart(s_[pos_])) Fail(std::string("expected ") + what);
    const size_t b = pos_;
    while (!AtEnd() && NameChar(s_[pos_])) ++pos_;
    return s_.substr(b, pos_ - b);
  }

  // Comments, whitespace, and the forbidden constructs outside the root element.
  void Misc() {
    for (;;) {
      SkipSpace();
      if (StartsWith("<!--")) {
        Comment();
      } else if (StartsWith("<!DOCTYPE")) {
        Fail("a DOCTYPE is not supported (supported: elements, attributes, comments, the <?xml?> declaration)");
      } else if (StartsWith("<?")) {
        Fail("a processing instruction is not supported (only the <?xml ...?> declaration, first in the file)");
      } else {
        return;
      }
    }
  }

  void Declaration() {
    const int start = line_;
    const size_t end = s_.find("?>", pos_);
    if (end == std::string::npos) FailAt(start, "unterminated <?xml ...?> declaration");
    Advance(end + 2 - pos_);
  }

  void Comment() {
    const int start = line_;
    Advance(4);
    const size_t end = s_.find("--", pos_);
    if (end == std::string::npos) FailAt(start, "unterminated comment '<!--'");
    if (end + 2 >= s_.size() || s_[end + 2] != '>') {
      Advance(end - pos_);
      Fail("'--' inside a comment");
    }
    Advance(end + 3 - pos_);
  }

  // Resolves an entity or character reference at pos_ ('&'), appending it to `out`.
  void Reference(std::string& out) {
    const size_t semi = s_.find(';', pos_);
    if (semi == std::string::npos || semi - pos_ > 12) Fail("'&' that starts no entity (write &amp; for '&')");
    const std::string ent = s_.substr(pos_ + 1, semi - pos_ - 1);
    if (ent == "amp") out += '&';
    else if (ent == "lt") out += '<';
    else if (ent == "gt") out += '>';
    else if (ent == "quot") out += '"';
    else if (ent == "apos") out += '\'';
    else if (ent.size() >= 2 && ent[0] == '#') {
      const bool hex = ent[1] == 'x';
      const std::string digits = ent.substr(hex ? 2 : 1);
      if (digits.empty()) Fail("empty character reference &" + ent + ";");
      uint32_t cp = 0;
      for (char c : digits) {
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else Fail("bad character reference &" + ent + ";");
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
        if (cp > 0x10FFFF) Fail("character reference &" + ent + "; is beyond Unicode");
      }
      if (cp == 0) Fail("character reference &" + ent + "; is NUL");
      AppendUtf8(out, cp);
    } else {
      Fail("unknown entity &" + ent + "; (supported: &amp; &lt; &gt; &quot; &apos; and &#N;)");
    }
    Advance(semi + 1 - pos_);
  }

  Attribute AttributeAt() {
    Attribute a;
    a.line = line_;
    a.name = Name("an attribute name");
    SkipSpace();
    Expect('=', "'=' after attribute " + a.name);
    SkipSpace();
    if (AtEnd() || (s_[pos_] != '"' && s_[pos_] != '\'')) Fail("expected a quoted value for attribute " + a.name);
    const char q = s_[pos_];
    Advance(1);
    for (;;) {
      if (AtEnd()) FailAt(a.line, "unterminated value of attribute " + a.name);
      const char c = s_[pos_];
      if (c == q) break;
      if (c == '<') Fail("'<' inside the value of attribute " + a.name + " (write &lt;)");
      if (c == '&') {
        Reference(a.value);
        continue;
      }
      // Attribute-value normalisation: whitespace characters become spaces.
      a.value += (c == '\t' || c == '\n' || c == '\r') ? ' ' : c;
      Advance(1);
    }
    Advance(1);
    return a;
  }

  Element ElementAt() {
    Element e;
    e.line = line_;
    // Elements nest by recursion: bound it, so a hostile file cannot exhaust the stack.
    if (++depth_ > kMaxDepth) Fail("elements nest deeper than " + std::to_string(kMaxDepth) + " levels");
    Advance(1);  // '<'
    e.name = Name("an element name");
    for (;;) {
      const bool had_space = !AtEnd() && Space(s_[pos_]);
      SkipSpace();
      if (AtEnd()) FailAt(e.line, "unterminated start tag <" + e.name);
      if (StartsWith("/>")) {
        Advance(2);
        --depth_;
        return e;
      }
      if (s_[pos_] == '>') {
        Advance(1);
        break;
      }
      if (!had_space) Fail("expected whitespace, '>' or '/>' in the start tag of <" + e.name + ">");
      Attribute a = AttributeAt();
      for (const auto& o : e.attributes)
        if (o.name == a.name) FailAt(a.line, "attribute " + a.name + " appears twice in <" + e.name + ">");
      e.attributes.push_back(std::move(a));
    }
    Content(e);
    --depth_;
    return e;
  }

  void Content(Element& e) {
    for (;;) {
      if (AtEnd()) FailAt(e.line, "element <" + e.name + "> is not closed (missing </" + e.name + ">)");
      const char c = s_[pos_];
      if (c == '<') {
        if (StartsWith("</")) {
          Advance(2);
          const int line = line_;
          const std::string name = Name("an element name after '</'");
          if (name != e.name)
            FailAt(line, "end tag </" + name + "> does not match <" + e.name + "> of line " + std::to_string(e.line));
          SkipSpace();
          Expect('>', "'>' to close the end tag");
          return;
        }
        if (StartsWith("<!--")) {
          Comment();
        } else if (StartsWith("<![CDATA[")) {
          const int start = line_;
          Advance(9);
          const size_t end = s_.find("]]>", pos_);
          if (end == std::string::npos) FailAt(start, "unterminated CDATA section");
          e.text += s_.substr(pos_, end - pos_);
          Advance(end + 3 - pos_);
        } else if (StartsWith("<?")) {
          Fail("a processing instruction is not supported");
        } else if (StartsWith("<!")) {
          Fail("a markup declaration is not supported inside elements");
        } else {
          e.children.push_back(ElementAt());
        }
      } else if (c == '&') {
        Reference(e.text);
      } else {
        if (c == '>' && pos_ >= 2 && s_.compare(pos_ - 2, 2, "]]") == 0) Fail("']]>' in character data");
        e.text += c;
        Advance(1);
      }
    }
  }

  const std::string& s_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
  int depth_ = 0;
  static constexpr int kMaxDepth = 256;
};

}  // namespace

const Attribute* Element::Find(const std::string& attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

Element Parse(const std::string& text, const std::string& source_name) { return Parser(text, source_name).Document(); }

}  // namespace platoon::road::xml
