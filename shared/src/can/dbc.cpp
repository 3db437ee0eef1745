#include "platoon/can/dbc.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace platoon::can {

namespace dbc_detail {

// ---------------------------------------------------------------------------------------------
// Lexer: the whole file as tokens with their line and column, so that statements may span lines
// (CM_ strings) while line-bound lists (BU_ nodes, SG_ receivers, the NS_ block) can still be found.

enum class TokKind { kIdent, kNumber, kString, kPunct, kEnd };

struct Token {
  TokKind kind = TokKind::kEnd;
  std::string text;   // identifier, number text, unescaped string, or the punctuation character
  size_t line = 0;    // 1-based
  size_t column = 0;  // 0-based byte column of the token's first character
};

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Shown(const Token& t) {
  switch (t.kind) {
    case TokKind::kEnd: return "the end of the file";
    case TokKind::kString: return "the string \"" + t.text.substr(0, 40) + (t.text.size() > 40 ? "...\"" : "\"");
    default: return "'" + t.text + "'";
  }
}

std::vector<Token> Lex(std::string_view text, const std::string& source) {
  std::vector<Token> out;
  size_t i = 0, line = 1, line_start = 0;
  // A UTF-8 byte order mark is not part of the text.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") i = line_start = 3;
  auto fail = [&](size_t at_line, const std::string& msg) {
    throw DbcError(source + ":" + std::to_string(at_line) + ": " + msg);
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    Token tok;
    tok.line = line;
    tok.column = i - line_start;
    if (IsIdentStart(c)) {
      // Identifier (keywords too).
      size_t j = i;
      while (j < text.size() && IsIdentChar(text[j])) ++j;
      tok.kind = TokKind::kIdent;
      tok.text = std::string(text.substr(i, j - i));
      i = j;
    } else if (IsDigit(c) || ((c == '-' || c == '+' || c == '.') && i + 1 < text.size() &&
                              (IsDigit(text[i + 1]) || (text[i + 1] == '.' && c != '.')))) {
      // Number: sign, digits, fraction, exponent. A sign not followed by a digit is punctuation (SG_ "@1+").
      size_t j = i + 1;
      while (j < text.size()) {
        const char d = text[j];
        if (IsDigit(d) || d == '.' || IsIdentChar(d)) {
          // Letters are taken in so that "12ab" is reported whole rather than split.
          if ((d == 'e' || d == 'E') && j + 1 < text.size() && (text[j + 1] == '+' || text[j + 1] == '-')) ++j;
          ++j;
        } else {
          break;
        }
      }
      tok.kind = TokKind::kNumber;
      tok.text = std::string(text.substr(i, j - i));
      i = j;
    } else if (c == '"') {
      // String: may span lines; \" and \\ are escapes.
      const size_t open_line = line;
      size_t j = i + 1;
      std::string s;
      for (;;) {
        if (j >= text.size()) fail(open_line, "expected '\"' closing the string opened on this line, got the end of the file");
        const char d = text[j];
        if (d == '\\' && j + 1 < text.size() && (text[j + 1] == '"' || text[j + 1] == '\\')) {
          s += text[j + 1];
          j += 2;
          continue;
        }
        if (d == '"') break;
        if (d == '\n') {
          ++line;
          line_start = j + 1;
        }
        s += d;
        ++j;
      }
      tok.kind = TokKind::kString;
      tok.text = std::move(s);
      i = j + 1;
    } else if (std::strchr(":;|@+-()[],", c) != nullptr) {
      tok.kind = TokKind::kPunct;
      tok.text = std::string(1, c);
      ++i;
    } else {
      const unsigned char u = static_cast<unsigned char>(c);
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      fail(line, std::string("expected a DBC token (a keyword, name, number, string or one of : ; | @ + - ( ) [ ] ,), got '") +
                     (u >= 0x20 && u < 0x7F ? std::string(1, c) : std::string(buf)) + "'");
    }
    out.push_back(std::move(tok));
  }
  Token end;
  end.line = line;
  out.push_back(end);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parser.

// The DBC id's extended-frame flag.
constexpr uint64_t kDbcExtendedFlag = 0x80000000u;
// The id Vector tools give the pseudo message that holds signals of no message.
constexpr uint64_t kIndependentSignalsId = 0xC0000000u;

// Statements the format defines that platoon does not use: skipped up to their ';'.
const std::set<std::string, std::less<>> kSkippedStatements = {
    "BO_TX_BU_",    "EV_",         "ENVVAR_DATA_", "SGTYPE_",     "SGTYPE_VAL_", "SIG_GROUP_",
    "SIG_TYPE_REF_", "BA_DEF_REL_", "BA_DEF_DEF_REL_", "BA_REL_", "BU_SG_REL_",  "BU_EV_REL_",
    "BU_BO_REL_",   "CAT_DEF_",    "CAT_",         "FILTER",      "NS_DESC_",    "BA_DEF_SGTYPE_",
    "BA_SGTYPE_",   "SIG_VALTYPE_REL_"};

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& source) : toks_(std::move(tokens)), source_(source) {}

  Database Run() {
    while (Peek().kind != TokKind::kEnd) Statement();
    Finish();
    return std::move(db_);
  }

 private:
  // --- token helpers
  const Token& Peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  const Token& Next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  [[noreturn]] void Fail(size_t line, const std::string& msg) const {
    throw DbcError(source_ + ":" + std::to_string(line) + ": " + msg);
  }
  [[noreturn]] void Expected(const Token& got, const std::string& what) const {
    Fail(got.line, "expected " + what + ", got " + Shown(got));
  }
  bool IsPunct(const Token& t, char c) const { return t.kind == TokKind::kPunct && t.text[0] == c; }
  void ExpectPunct(char c, const std::string& where) {
    const Token& t = Next();
    if (!IsPunct(t, c)) Expected(t, std::string("'") + c + "' " + where);
  }
  std::string ExpectIdent(const std::string& what) {
    const Token& t = Next();
    if (t.kind != TokKind::kIdent) Expected(t, what);
    return t.text;
  }
  std::string ExpectString(const std::string& what) {
    const Token& t = Next();
    if (t.kind != TokKind::kString) Expected(t, what);
    return t.text;
  }
  uint64_t ExpectUnsigned(const std::string& what) {
    const Token& t = Next();
    uint64_t v = 0;
    if (t.kind != TokKind::kNumber) Expected(t, what);
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    if (*b == '+') ++b;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e) Expected(t, what);
    return v;
  }
  int64_t ExpectInteger(const std::string& what) {
    const Token& t = Next();
    int64_t v = 0;
    if (t.kind != TokKind::kNumber) Expected(t, what);
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    if (*b == '+') ++b;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e) Expected(t, what);
    return v;
  }
  double ExpectDouble(const std::string& what) {
    const Token& t = Next();
    if (t.kind != TokKind::kNumber) Expected(t, what);
    char* end = nullptr;
    const double v = std::strtod(t.text.c_str(), &end);
    if (end != t.text.c_str() + t.text.size() || !std::isfinite(v)) Expected(t, what);
    return v;
  }
  // Skips to the ';' that ends the statement begun by `start` (a keyword token).
  void SkipStatement(const Token& start) {
    for (;;) {
      const Token& t = Next();
      if (t.kind == TokKind::kEnd) {
        Fail(start.line, "expected ';' ending the " + start.text + " statement of line " + std::to_string(start.line) +
                         ", got the end of the file");
      }
      if (IsPunct(t, ';')) return;
    }
  }
  void ExpectEnd(const std::string& keyword) { ExpectPunct(';', "ending the " + keyword + " statement"); }

  // --- statements
  void Statement() {
    const Token& kw = Next();
    if (kw.kind != TokKind::kIdent) Expected(kw, "a DBC keyword (VERSION, NS_, BS_, BU_, BO_, SG_, CM_, BA_, VAL_, ...)");
    const std::string& k = kw.text;
    if (k == "VERSION") {
      ExpectString("the version string after VERSION");
    } else if (k == "NS_") {
      // The new-symbols block: names on the NS_ line and on the indented lines below it.
      ExpectPunct(':', "after NS_");
      while (Peek().kind != TokKind::kEnd && (Peek().line == kw.line || Peek().column > 0)) Next();
    } else if (k == "BS_") {
      // Bit timing (obsolete): anything after "BS_:" on its line.
      ExpectPunct(':', "after BS_");
      while (Peek().kind != TokKind::kEnd && Peek().line == kw.line) Next();
    } else if (k == "BU_") {
      ExpectPunct(':', "after BU_");
      while (Peek().kind != TokKind::kEnd && Peek().line == kw.line) db_.nodes.push_back(ExpectIdent("a node name in BU_"));
    } else if (k == "VAL_TABLE_") {
      const std::string name = ExpectIdent("a value table name after VAL_TABLE_");
      db_.value_tables[name] = ValueDescriptions("VAL_TABLE_");
    } else if (k == "BO_") {
      Message_(kw);
    } else if (k == "SG_") {
      Signal_(kw);
    } else if (k == "CM_") {
      Comment();
    } else if (k == "BA_DEF_") {
      AttributeDefinition();
    } else if (k == "BA_DEF_DEF_") {
      AttributeDefault();
    } else if (k == "BA_") {
      AttributeValue();
    } else if (k == "VAL_") {
      SignalValues(kw);
    } else if (k == "SIG_VALTYPE_") {
      SignalValueType();
    } else if (k == "SG_MUL_VAL_") {
      Fail(kw.line, "expected simple multiplexing (one 'M' switch, 'm<N>' signals), got SG_MUL_VAL_: extended "
                    "multiplexing is not supported");
    } else if (kSkippedStatements.count(k) != 0) {
      SkipStatement(kw);
    } else {
      Expected(kw, "a DBC keyword (VERSION, NS_, BS_, BU_, BO_, SG_, CM_, BA_DEF_, BA_, VAL_, ...)");
    }
  }

  // VAL_TABLE_ and VAL_ bodies: {integer "description"} ';'.
  std::map<int64_t, std::string> ValueDescriptions(const std::string& keyword) {
    std::map<int64_t, std::string> table;
    while (!IsPunct(Peek(), ';')) {
      const int64_t raw = ExpectInteger("a raw value (integer) or ';' in " + keyword);
      table[raw] = ExpectString("the description string of raw value " + std::to_string(raw) + " in " + keyword);
    }
    Next();
    return table;
  }

  // Message id of a BO_ (and of references to it): the DBC id, checked.
  uint64_t DbcId(const std::string& what) { return ExpectUnsigned(what); }

  void Message_(const Token& kw) {
    const size_t id_line = Peek().line;
    const uint64_t dbc_id = DbcId("a message id (unsigned integer) after BO_");
    Message m;
    m.name = ExpectIdent("a message name after the id of BO_");
    ExpectPunct(':', "after the message name of BO_");
    const uint64_t length = ExpectUnsigned("the message length in bytes (0..64)");
    if (length > kFdMaxLen) Fail(kw.line, "expected a message length of 0..64 bytes, got " + std::to_string(length));
    m.length = static_cast<uint32_t>(length);
    m.fd = length > kClassicMaxLen;
    if (Peek().kind == TokKind::kIdent && Peek().line == kw.line) m.transmitter = Next().text;
    current_ = nullptr;
    if (dbc_id == kIndependentSignalsId) {
      // Signals of no message: read and dropped.
      scratch_ = m;
      current_ = &scratch_;
      return;
    }
    if (dbc_id > 0xFFFFFFFFu) Fail(id_line, "expected a message id of 32 bits, got " + std::to_string(dbc_id));
    if (dbc_id & kDbcExtendedFlag) {
      m.extended = true;
      m.id = static_cast<uint32_t>(dbc_id & ~kDbcExtendedFlag);
    } else {
      m.id = static_cast<uint32_t>(dbc_id);
      m.extended = m.id > kMaxStandardId;
    }
    if (m.id > kMaxExtendedId) {
      Fail(id_line, "expected a 29-bit extended id (at most 0x1FFFFFFF, with bit 31 as the extended flag), got " +
                        std::to_string(dbc_id));
    }
    if (by_dbc_id_.count(dbc_id) != 0 || db_.FindMessage(m.id, m.extended) != nullptr) {
      Fail(id_line, "expected a message id not defined before, got " + std::to_string(dbc_id) + " again (message " + m.name + ")");
    }
    by_dbc_id_[dbc_id] = db_.messages.size();
    db_.messages.push_back(std::move(m));
    current_ = &db_.messages.back();
    current_index_ = db_.messages.size() - 1;
  }

  void Signal_(const Token& kw) {
    if (current_ == nullptr) Fail(kw.line, "expected a BO_ message before its SG_ signals, got SG_");
    Signal s;
    s.name = ExpectIdent("a signal name after SG_");
    // Multiplexing: "M" (the switch) or "m<N>" (selected by value N).
    if (Peek().kind == TokKind::kIdent) {
      const Token& mux = Next();
      const std::string& t = mux.text;
      if (t == "M") {
        s.mux = MuxRole::kMultiplexor;
      } else if (t.size() >= 2 && t[0] == 'm' && std::all_of(t.begin() + 1, t.end(), IsDigit)) {
        s.mux = MuxRole::kMultiplexed;
        auto [p, ec] = std::from_chars(t.data() + 1, t.data() + t.size(), s.mux_value);
        if (ec != std::errc()) Expected(mux, "a multiplexer value m<N> that fits 64 bits");
      } else if (t.size() >= 3 && t[0] == 'm' && t.back() == 'M') {
        Fail(mux.line, "expected simple multiplexing ('M' or 'm<N>'), got '" + t +
                           "': extended multiplexing (a signal both multiplexed and multiplexor) is not supported");
      } else {
        Expected(mux, "':' or a multiplexer indicator ('M' or 'm<N>') after the signal name " + s.name);
      }
    }
    ExpectPunct(':', "after the signal name " + s.name);
    const uint64_t start = ExpectUnsigned("the start bit of signal " + s.name);
    ExpectPunct('|', "between the start bit and the length of signal " + s.name);
    const size_t len_line = Peek().line;
    const uint64_t length = ExpectUnsigned("the length in bits of signal " + s.name);
    if (length < 1 || length > 64) Fail(len_line, "expected a signal length of 1..64 bits, got " + std::to_string(length) + " (signal " + s.name + ")");
    ExpectPunct('@', "before the byte order of signal " + s.name);
    const Token& order = Next();
    if (order.kind == TokKind::kNumber && order.text == "1") s.byte_order = ByteOrder::kIntel;
    else if (order.kind == TokKind::kNumber && order.text == "0") s.byte_order = ByteOrder::kMotorola;
    else Expected(order, "the byte order 0 (Motorola) or 1 (Intel) of signal " + s.name);
    const Token& sign = Next();
    if (IsPunct(sign, '+')) s.is_signed = false;
    else if (IsPunct(sign, '-')) s.is_signed = true;
    else Expected(sign, "'+' (unsigned) or '-' (signed) after the byte order of signal " + s.name);
    ExpectPunct('(', "before the factor of signal " + s.name);
    const size_t factor_line = Peek().line;
    s.factor = ExpectDouble("the factor (a number) of signal " + s.name);
    if (s.factor == 0.0) Fail(factor_line, "expected a non-zero factor, got 0 (signal " + s.name + ")");
    ExpectPunct(',', "between the factor and the offset of signal " + s.name);
    s.offset = ExpectDouble("the offset (a number) of signal " + s.name);
    ExpectPunct(')', "after the offset of signal " + s.name);
    ExpectPunct('[', "before the minimum of signal " + s.name);
    s.minimum = ExpectDouble("the minimum (a number) of signal " + s.name);
    ExpectPunct('|', "between the minimum and the maximum of signal " + s.name);
    s.maximum = ExpectDouble("the maximum (a number) of signal " + s.name);
    ExpectPunct(']', "after the maximum of signal " + s.name);
    const Token& unit = Next();
    if (unit.kind != TokKind::kString) Expected(unit, "the unit string (\"\" when none) of signal " + s.name);
    s.unit = unit.text;
    // Receivers: names separated by ',' on the rest of the line.
    size_t last_line = unit.line + static_cast<size_t>(std::count(unit.text.begin(), unit.text.end(), '\n'));
    while (Peek().line == last_line && (Peek().kind == TokKind::kIdent || IsPunct(Peek(), ','))) {
      const Token& r = Next();
      if (r.kind == TokKind::kIdent) s.receivers.push_back(r.text);
    }
    s.start_bit = static_cast<uint32_t>(std::min<uint64_t>(start, 0xFFFFFFFFu));
    s.length = static_cast<uint32_t>(length);
    if (current_ == &scratch_) return;  // a signal of no message: dropped
    // The signal must lie within the message's payload.
    const uint64_t first = s.byte_order == ByteOrder::kIntel ? start : (start / 8) * 8 + (7 - start % 8);
    const uint64_t last = first + length - 1;
    if (start >= 8ull * kFdMaxLen || last >= 8ull * current_->length) {
      Fail(kw.line, "expected signal " + s.name + " (start bit " + std::to_string(start) + ", " + std::to_string(length) +
                        " bits, " + (s.byte_order == ByteOrder::kIntel ? "Intel" : "Motorola") + ") within the " +
                        std::to_string(current_->length) + " bytes of message " + current_->name + ", got its bits up to byte " +
                        std::to_string(last / 8));
    }
    if (current_->FindSignal(s.name) != nullptr) {
      Fail(kw.line, "expected a signal name not used before in message " + current_->name + ", got " + s.name + " again");
    }
    signal_lines_[{current_index_, s.name}] = kw.line;
    current_->signals.push_back(std::move(s));
  }

  // The message a reference (CM_ BO_, BA_ BO_, VAL_, SIG_VALTYPE_) names; nullptr for the pseudo message
  // of independent signals.
  Message* MessageRef(const std::string& keyword) {
    const Token& t = Peek();
    const uint64_t dbc_id = DbcId("a message id after " + keyword);
    if (dbc_id == kIndependentSignalsId) return nullptr;
    auto it = by_dbc_id_.find(dbc_id);
    if (it == by_dbc_id_.end()) Expected(t, "the id of a message defined by a BO_ (in " + keyword + ")");
    return &db_.messages[it->second];
  }
  Signal* SignalRef(Message* m, const std::string& keyword) {
    const Token& t = Peek();
    const std::string name = ExpectIdent("a signal name in " + keyword);
    if (m == nullptr) return nullptr;
    for (Signal& s : m->signals) {
      if (s.name == name) return &s;
    }
    Expected(t, "a signal of message " + m->name + " (in " + keyword + ")");
  }

  void Comment() {
    const Token& t = Peek();
    if (t.kind == TokKind::kString) {
      Next();  // the file's comment
    } else if (t.kind == TokKind::kIdent && t.text == "BU_") {
      Next();
      ExpectIdent("a node name after CM_ BU_");
      ExpectString("the comment string of CM_ BU_");
    } else if (t.kind == TokKind::kIdent && t.text == "BO_") {
      Next();
      Message* m = MessageRef("CM_ BO_");
      std::string text = ExpectString("the comment string of CM_ BO_");
      if (m != nullptr) m->comment = std::move(text);
    } else if (t.kind == TokKind::kIdent && t.text == "SG_") {
      Next();
      Message* m = MessageRef("CM_ SG_");
      Signal* s = SignalRef(m, "CM_ SG_");
      std::string text = ExpectString("the comment string of CM_ SG_");
      if (s != nullptr) s->comment = std::move(text);
    } else if (t.kind == TokKind::kIdent && t.text == "EV_") {
      Next();
      ExpectIdent("an environment variable name after CM_ EV_");
      ExpectString("the comment string of CM_ EV_");
    } else {
      Expected(t, "a comment string or BU_, BO_, SG_ or EV_ after CM_");
    }
    ExpectEnd("CM_");
  }

  // BA_DEF_ [BU_|BO_|SG_|EV_] "name" type params ';' -- kept: the ENUM of VFrameFormat.
  void AttributeDefinition() {
    if (Peek().kind == TokKind::kIdent) {
      const Token& obj = Next();
      if (obj.text != "BU_" && obj.text != "BO_" && obj.text != "SG_" && obj.text != "EV_") {
        Expected(obj, "an attribute name string or BU_, BO_, SG_ or EV_ after BA_DEF_");
      }
    }
    const std::string name = ExpectString("the attribute name string of BA_DEF_");
    const std::string type = ExpectIdent("the attribute type (INT, HEX, FLOAT, STRING or ENUM) of BA_DEF_ \"" + name + "\"");
    if (type == "ENUM") {
      std::vector<std::string> values;
      while (!IsPunct(Peek(), ';')) {
        if (IsPunct(Peek(), ',')) {
          Next();
          continue;
        }
        values.push_back(ExpectString("an enum value string, ',' or ';' in BA_DEF_ \"" + name + "\""));
      }
      enums_[name] = std::move(values);
    } else if (type == "INT" || type == "HEX" || type == "FLOAT") {
      ExpectDouble("the minimum of " + type + " attribute \"" + name + "\"");
      ExpectDouble("the maximum of " + type + " attribute \"" + name + "\"");
    } else if (type != "STRING") {
      Fail(Peek().line, "expected the attribute type INT, HEX, FLOAT, STRING or ENUM of BA_DEF_ \"" + name + "\", got '" + type + "'");
    }
    ExpectEnd("BA_DEF_");
  }

  // An attribute value: a number or a string.
  Token AttributeValueToken(const std::string& keyword) {
    const Token& t = Next();
    if (t.kind != TokKind::kNumber && t.kind != TokKind::kString) Expected(t, "an attribute value (number or string) in " + keyword);
    return t;
  }

  void AttributeDefault() {
    const std::string name = ExpectString("the attribute name string of BA_DEF_DEF_");
    defaults_[name] = AttributeValueToken("BA_DEF_DEF_ \"" + name + "\"");
    ExpectEnd("BA_DEF_DEF_");
  }

  void AttributeValue() {
    const std::string name = ExpectString("the attribute name string of BA_");
    const Token& t = Peek();
    Message* m = nullptr;
    bool on_message = false;
    if (t.kind == TokKind::kIdent) {
      Next();
      if (t.text == "BU_" || t.text == "EV_") {
        ExpectIdent("a name after BA_ \"" + name + "\" " + t.text);
      } else if (t.text == "BO_") {
        m = MessageRef("BA_ \"" + name + "\" BO_");
        on_message = true;
      } else if (t.text == "SG_") {
        Message* sm = MessageRef("BA_ \"" + name + "\" SG_");
        SignalRef(sm, "BA_ \"" + name + "\" SG_");
      } else {
        Expected(t, "BU_, BO_, SG_, EV_ or a value after BA_ \"" + name + "\"");
      }
    }
    Token value = AttributeValueToken("BA_ \"" + name + "\"");
    ExpectEnd("BA_");
    if (on_message && m != nullptr) message_attrs_[static_cast<size_t>(m - db_.messages.data())][name] = value;
  }

  void SignalValues(const Token& kw) {
    if (Peek().kind != TokKind::kNumber) {
      // VAL_ of an environment variable: not used.
      SkipStatement(kw);
      return;
    }
    Message* m = MessageRef("VAL_");
    Signal* s = SignalRef(m, "VAL_");
    auto table = ValueDescriptions("VAL_");
    if (s != nullptr) s->value_table = std::move(table);
  }

  void SignalValueType() {
    Message* m = MessageRef("SIG_VALTYPE_");
    Signal* s = SignalRef(m, "SIG_VALTYPE_");
    if (IsPunct(Peek(), ':')) Next();
    const Token& t = Peek();
    const int64_t type = ExpectInteger("the value type 0 (integer), 1 (IEEE float) or 2 (IEEE double) in SIG_VALTYPE_");
    if (type < 0 || type > 2) Expected(t, "the value type 0 (integer), 1 (IEEE float) or 2 (IEEE double) in SIG_VALTYPE_");
    if (s != nullptr) {
      const uint32_t need = type == 1 ? 32 : 64;
      if (type != 0 && s->length != need) {
        Fail(t.line, "expected a " + std::to_string(need) + "-bit signal for SIG_VALTYPE_ " + std::to_string(type) + ", got " +
                         s->name + " of " + std::to_string(s->length) + " bits");
      }
      s->value_type = type == 0 ? ValueType::kInteger : type == 1 ? ValueType::kFloat32 : ValueType::kFloat64;
    }
    ExpectEnd("SIG_VALTYPE_");
  }

  // --- after the last statement: attributes, multiplexing checks.
  bool FrameFormatIsFd(const Token& v) const {
    std::string name;
    if (v.kind == TokKind::kString) {
      name = v.text;
    } else {
      const double index = std::strtod(v.text.c_str(), nullptr);
      auto it = enums_.find("VFrameFormat");
      if (it != enums_.end() && index >= 0 && index < static_cast<double>(it->second.size())) {
        name = it->second[static_cast<size_t>(index)];
      } else {
        return index == 14 || index == 15;  // StandardCAN_FD, ExtendedCAN_FD in Vector's enumeration
      }
    }
    return name.find("FD") != std::string::npos;
  }

  void Finish() {
    for (size_t i = 0; i < db_.messages.size(); ++i) {
      Message& m = db_.messages[i];
      const auto& attrs = message_attrs_[i];
      auto value = [&](const std::string& name) -> const Token* {
        auto it = attrs.find(name);
        if (it != attrs.end()) return &it->second;
        auto d = defaults_.find(name);
        return d != defaults_.end() ? &d->second : nullptr;
      };
      if (const Token* f = value("VFrameFormat"); f != nullptr && FrameFormatIsFd(*f)) m.fd = true;
      if (const Token* c = value("GenMsgCycleTime"); c != nullptr && c->kind == TokKind::kNumber) {
        const double ms = std::strtod(c->text.c_str(), nullptr);
        if (ms > 0 && ms < 4.0e9) m.cycle_time_ms = static_cast<uint32_t>(std::lround(ms));
      }
      // Simple multiplexing: at most one switch, and multiplexed signals need it.
      const Signal* multiplexor = nullptr;
      for (const Signal& s : m.signals) {
        if (s.mux != MuxRole::kMultiplexor) continue;
        if (multiplexor != nullptr) {
          Fail(signal_lines_[{i, s.name}], "expected one multiplexor ('M') in message " + m.name + ", got a second one, " + s.name +
                                               " (extended multiplexing is not supported)");
        }
        if (s.value_type != ValueType::kInteger) {
          Fail(signal_lines_[{i, s.name}], "expected an integer multiplexor, got the float signal " + s.name);
        }
        multiplexor = &s;
      }
      for (const Signal& s : m.signals) {
        if (s.mux == MuxRole::kMultiplexed && multiplexor == nullptr) {
          Fail(signal_lines_[{i, s.name}], "expected a multiplexor ('M') in message " + m.name + " for the multiplexed signal " +
                                               s.name + ", got none");
        }
      }
    }
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  const std::string& source_;
  Database db_;
  Message* current_ = nullptr;  // the message of the last BO_, receiving SG_ lines
  size_t current_index_ = 0;
  Message scratch_;  // the pseudo message of independent signals
  std::map<uint64_t, size_t> by_dbc_id_;
  std::map<std::pair<size_t, std::string>, size_t> signal_lines_;
  std::map<std::string, std::vector<std::string>> enums_;
  std::map<std::string, Token> defaults_;
  std::map<size_t, std::map<std::string, Token>> message_attrs_;
};

// ---------------------------------------------------------------------------------------------
// Bit layout.

// Bit position of the signal's first bit: its LSB (Intel) or its MSB (Motorola), counted from the MSB of
// byte 0 for Motorola ("big-endian linear"), from the LSB of byte 0 for Intel.
inline uint32_t FirstBit(const Signal& s) {
  return s.byte_order == ByteOrder::kIntel ? s.start_bit : (s.start_bit / 8) * 8 + (7 - s.start_bit % 8);
}

inline uint64_t LowMask(uint32_t bits) { return bits >= 64 ? ~0ull : ((1ull << bits) - 1); }

// Whether every bit of the signal lies within `len` payload bytes.
inline bool FitsIn(const Signal& s, uint32_t len) { return FirstBit(s) + s.length <= 8 * len; }

// The signal's raw value as a number (before factor and offset).
double RawAsNumber(const Signal& signal, int64_t raw) {
  switch (signal.value_type) {
    case ValueType::kFloat32:
      return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(raw)));
    case ValueType::kFloat64:
      return std::bit_cast<double>(raw);
    case ValueType::kInteger:
      break;
  }
  if (signal.is_signed) return static_cast<double>(raw);
  return static_cast<double>(static_cast<uint64_t>(raw) & LowMask(signal.length));
}

// Whether [minimum, maximum] limits the physical value (min == max == 0 means no range).
bool HasRange(const Signal& s) { return !(s.minimum == 0.0 && s.maximum == 0.0) && s.minimum <= s.maximum; }

// The message's multiplexor ("M"), or nullptr.
const Signal* FindMultiplexor(const Message& message) {
  for (const Signal& s : message.signals) {
    if (s.mux == MuxRole::kMultiplexor) return &s;
  }
  return nullptr;
}

}  // namespace dbc_detail

using dbc_detail::FirstBit;
using dbc_detail::FitsIn;
using dbc_detail::LowMask;

std::string Message::SignalNames() const {
  std::string out;
  for (const Signal& s : signals) out += (out.empty() ? "" : ", ") + s.name;
  return out.empty() ? "none" : out;
}

const Signal* Message::FindSignal(std::string_view name) const {
  for (const Signal& s : signals) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const Message* Database::FindMessage(uint32_t id, bool extended) const {
  for (const Message& m : messages) {
    if (m.id == id && m.extended == extended) return &m;
  }
  return nullptr;
}

const Message* Database::FindMessage(std::string_view name) const {
  for (const Message& m : messages) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

Database ParseDbc(std::string_view text, const std::string& source) {
  return dbc_detail::Parser(dbc_detail::Lex(text, source), source).Run();
}

Database LoadDbc(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DbcError(path + ": expected a readable DBC file, got " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw DbcError(path + ": expected a readable DBC file, got a read error");
  return ParseDbc(text.str(), path);
}

int64_t ExtractRaw(const Signal& signal, const uint8_t* data, uint32_t len) {
  assert(signal.length >= 1 && signal.length <= 64);
  uint64_t value = 0;
  uint32_t pos = FirstBit(signal);
  const uint32_t limit = 8 * len;
  if (signal.byte_order == ByteOrder::kIntel) {
    // LSB first: each byte adds its bits above those already read.
    for (uint32_t got = 0; got < signal.length;) {
      const uint32_t off = pos % 8;
      const uint32_t n = std::min(8 - off, signal.length - got);
      const uint64_t byte = pos < limit ? data[pos / 8] : 0;
      value |= ((byte >> off) & LowMask(n)) << got;
      got += n;
      pos += n;
    }
  } else {
    // MSB first: each byte's bits (counted from its MSB) shift in below those already read.
    for (uint32_t got = 0; got < signal.length;) {
      const uint32_t off = pos % 8;
      const uint32_t n = std::min(8 - off, signal.length - got);
      const uint64_t byte = pos < limit ? data[pos / 8] : 0;
      value = (value << n) | ((byte >> (8 - off - n)) & LowMask(n));
      got += n;
      pos += n;
    }
  }
  // Sign extension of a two's complement value.
  if (signal.is_signed && signal.value_type == ValueType::kInteger && signal.length < 64 &&
      (value >> (signal.length - 1)) & 1u) {
    value |= ~LowMask(signal.length);
  }
  return static_cast<int64_t>(value);
}

void InsertRaw(const Signal& signal, int64_t raw, uint8_t* data, uint32_t len) {
  assert(signal.length >= 1 && signal.length <= 64);
  const uint64_t value = static_cast<uint64_t>(raw) & LowMask(signal.length);
  uint32_t pos = FirstBit(signal);
  const uint32_t limit = 8 * len;
  if (signal.byte_order == ByteOrder::kIntel) {
    for (uint32_t done = 0; done < signal.length;) {
      const uint32_t off = pos % 8;
      const uint32_t n = std::min(8 - off, signal.length - done);
      if (pos < limit) {
        const uint8_t mask = static_cast<uint8_t>(LowMask(n) << off);
        const uint8_t bits = static_cast<uint8_t>(((value >> done) & LowMask(n)) << off);
        data[pos / 8] = static_cast<uint8_t>((data[pos / 8] & ~mask) | bits);
      }
      done += n;
      pos += n;
    }
  } else {
    for (uint32_t done = 0; done < signal.length;) {
      const uint32_t off = pos % 8;
      const uint32_t n = std::min(8 - off, signal.length - done);
      if (pos < limit) {
        // The next n bits below the ones already written, from the value's MSB end.
        const uint32_t shift = signal.length - done - n;
        const uint32_t at = 8 - off - n;
        const uint8_t mask = static_cast<uint8_t>(LowMask(n) << at);
        const uint8_t bits = static_cast<uint8_t>(((value >> shift) & LowMask(n)) << at);
        data[pos / 8] = static_cast<uint8_t>((data[pos / 8] & ~mask) | bits);
      }
      done += n;
      pos += n;
    }
  }
}


double DecodeSignal(const Signal& signal, const Frame& frame) {
  return dbc_detail::RawAsNumber(signal, ExtractRaw(signal, frame.data.data(), frame.len)) * signal.factor + signal.offset;
}

int64_t PhysicalToRaw(const Signal& signal, double physical) {
  double p = physical;
  if (std::isnan(p)) p = signal.offset;  // no value: raw 0
  if (dbc_detail::HasRange(signal)) p = std::clamp(p, signal.minimum, signal.maximum);
  const double scaled = (p - signal.offset) / signal.factor;
  if (signal.value_type == ValueType::kFloat32) {
    return static_cast<int64_t>(std::bit_cast<uint32_t>(static_cast<float>(scaled)));
  }
  if (signal.value_type == ValueType::kFloat64) return std::bit_cast<int64_t>(scaled);
  // Integer: round half away from zero, then clamp to what `length` bits hold.
  const double r = std::round(scaled);
  const uint32_t n = signal.length;
  if (signal.is_signed) {
    const int64_t hi = n >= 64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>((1ull << (n - 1)) - 1);
    const int64_t lo = -hi - 1;
    // 2^(n-1) is exact in a double; compare against it before converting.
    const double limit = std::ldexp(1.0, static_cast<int>(n) - 1);
    if (r >= limit) return hi;
    if (r < -limit) return lo;
    return static_cast<int64_t>(r);
  }
  const uint64_t hi = LowMask(n);
  const double limit = std::ldexp(1.0, static_cast<int>(n));
  if (r >= limit) return static_cast<int64_t>(hi);
  if (r <= 0) return 0;
  return static_cast<int64_t>(static_cast<uint64_t>(r));
}

void EncodeSignal(const Signal& signal, double physical, Frame& frame) {
  InsertRaw(signal, PhysicalToRaw(signal, physical), frame.data.data(), frame.len);
}


bool SignalPresent(const Message& message, const Signal& signal, const Frame& frame) {
  if (!FitsIn(signal, frame.len)) return false;
  if (signal.mux != MuxRole::kMultiplexed) return true;
  const Signal* mux = dbc_detail::FindMultiplexor(message);
  if (mux == nullptr || !FitsIn(*mux, frame.len)) return false;
  const uint64_t selector = static_cast<uint64_t>(ExtractRaw(*mux, frame.data.data(), frame.len)) & LowMask(mux->length);
  return selector == signal.mux_value;
}

std::map<std::string, double> DecodeMessage(const Message& message, const Frame& frame) {
  std::map<std::string, double> out;
  for (const Signal& s : message.signals) {
    if (SignalPresent(message, s, frame)) out.emplace(s.name, DecodeSignal(s, frame));
  }
  return out;
}

Frame EncodeMessage(const Message& message, const std::map<std::string, double>& values) {
  Frame frame;
  frame.id = message.id;
  frame.extended = message.extended;
  frame.fd = message.fd;
  frame.len = static_cast<uint8_t>(message.fd ? FdLengthFor(message.length) : std::min<uint32_t>(message.length, kClassicMaxLen));
  for (const auto& [name, value] : values) {
    if (message.FindSignal(name) == nullptr) {
      throw std::invalid_argument("message " + message.name + " has no signal " + name);
    }
  }
  // The multiplexor and plain signals first, then the multiplexed signals its value selects.
  for (const Signal& s : message.signals) {
    if (s.mux == MuxRole::kMultiplexed) continue;
    auto it = values.find(s.name);
    if (it != values.end()) EncodeSignal(s, it->second, frame);
  }
  for (const Signal& s : message.signals) {
    if (s.mux != MuxRole::kMultiplexed || !SignalPresent(message, s, frame)) continue;
    auto it = values.find(s.name);
    if (it != values.end()) EncodeSignal(s, it->second, frame);
  }
  return frame;
}

}  // namespace platoon::can
