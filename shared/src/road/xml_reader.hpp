#pragma once
/// A small, strict XML reader for the OpenDRIVE loader (opendrive.cpp): elements, attributes, comments,
/// the <?xml ...?> declaration, CDATA sections, the five predefined entities (&amp; &lt; &gt; &quot; &apos;)
/// and numeric character references. No DTDs, no namespaces, no processing instructions besides the
/// declaration; elements nest at most 256 deep. Every element and attribute keeps the line it starts on, for file:line messages.
/// Pure: parses a string; the caller reads the file.

#include <stdexcept>
#include <string>
#include <vector>

namespace platoon::road::xml {

/// A syntax error; what() is "source:line: message".
class XmlError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One attribute as written (entities resolved).
struct Attribute {
  std::string name;   ///< Attribute name.
  std::string value;  ///< Value with entities resolved.
  int line = 0;       ///< 1-based line where the attribute's name stands.
};

/// One element with its attributes, child elements and character data.
struct Element {
  std::string name;                  ///< Tag name.
  int line = 0;                      ///< 1-based line of the '<' of its start tag.
  std::vector<Attribute> attributes; ///< In document order; names are unique.
  std::vector<Element> children;     ///< Child elements in document order.
  std::string text;                  ///< Character data directly inside it (all runs joined), entities resolved.

  /// The attribute `name`, or nullptr.
  const Attribute* Find(const std::string& attr_name) const;
};

/// Parses a whole document and returns its root element. Throws XmlError naming `source_name` and the line.
Element Parse(const std::string& text, const std::string& source_name);

}  // namespace platoon::road::xml
