// OpenSCENARIO parameter expressions (`${...}`): a recursive-descent evaluator over doubles.
#include "platoon/scenario/osc.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace platoon::scenario {
namespace osc_expression_detail {

class Parser {
 public:
  Parser(const std::string& text, const std::map<std::string, std::string>& params) : s_(text), params_(params) {}

  double Run() {
    const double v = Or();
    Skip();
    if (i_ != s_.size()) Fail("an operator or the end");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& expected) const {
    throw std::invalid_argument("expression \"" + s_ + "\": expected " + expected + " at character " +
                                std::to_string(i_ + 1) + ", got " +
                                (i_ < s_.size() ? "'" + std::string(1, s_[i_]) + "'" : std::string("the end")));
  }
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(const std::string& op) {
    Skip();
    if (s_.compare(i_, op.size(), op) != 0) return false;
    // A word operator must not run into a name ("order" is no "or").
    if (std::isalpha(static_cast<unsigned char>(op[0])) && i_ + op.size() < s_.size() &&
        (std::isalnum(static_cast<unsigned char>(s_[i_ + op.size()])) || s_[i_ + op.size()] == '_'))
      return false;
    i_ += op.size();
    return true;
  }
  double Or() {
    double v = And();
    while (Eat("or")) {
      const double r = And();
      v = (v != 0 || r != 0) ? 1 : 0;
    }
    return v;
  }
  double And() {
    double v = Sum();
    while (Eat("and")) {
      const double r = Sum();
      v = (v != 0 && r != 0) ? 1 : 0;
    }
    return v;
  }
  double Sum() {
    double v = Product();
    for (;;) {
      if (Eat("+")) v += Product();
      else if (Eat("-")) v -= Product();
      else return v;
    }
  }
  double Product() {
    double v = Unary();
    for (;;) {
      if (Eat("*")) {
        v *= Unary();
      } else if (Eat("/")) {
        const double d = Unary();
        if (d == 0) Fail("a divisor other than 0");
        v /= d;
      } else if (Eat("%")) {
        const double d = Unary();
        if (d == 0) Fail("a divisor other than 0");
        v = std::fmod(v, d);
      } else {
        return v;
      }
    }
  }
  double Unary() {
    if (Eat("-")) return -Unary();
    if (Eat("not")) return Unary() == 0 ? 1 : 0;
    return Primary();
  }
  double Call(const std::string& f) {
    if (!Eat("(")) Fail("'(' after " + f);
    const double a = Or();
    double b = 0;
    if (f == "pow") {
      if (!Eat(",")) Fail("',' and the exponent of pow");
      b = Or();
    }
    if (!Eat(")")) Fail("')'");
    if (f == "round") return std::round(a);
    if (f == "floor") return std::floor(a);
    if (f == "ceil") return std::ceil(a);
    if (f == "sqrt") {
      if (a < 0) Fail("a square root of a number >= 0");
      return std::sqrt(a);
    }
    return std::pow(a, b);
  }
  double Primary() {
    Skip();
    if (Eat("(")) {
      const double v = Or();
      if (!Eat(")")) Fail("')'");
      return v;
    }
    if (i_ < s_.size() && s_[i_] == '$') {
      // A parameter: its value must itself be a number (or true/false).
      size_t j = ++i_;
      while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_')) ++j;
      const std::string name = s_.substr(i_, j - i_);
      if (name.empty()) Fail("a parameter name after '$'");
      const auto it = params_.find(name);
      if (it == params_.end()) {
        i_ -= 1;
        Fail("a declared parameter (no parameter \"" + name + "\")");
      }
      i_ = j;
      if (it->second == "true") return 1;
      if (it->second == "false") return 0;
      char* end = nullptr;
      const double v = std::strtod(it->second.c_str(), &end);
      if (it->second.empty() || *end != '\0') Fail("a numeric parameter (\"" + name + "\" is \"" + it->second + "\")");
      return v;
    }
    for (const char* f : {"round", "floor", "ceil", "sqrt", "pow"})
      if (Eat(f)) return Call(f);
    if (Eat("true")) return 1;
    if (Eat("false")) return 0;
    const char* start = s_.c_str() + i_;
    char* end = nullptr;
    const double v = std::strtod(start, &end);
    if (end == start || !(std::isdigit(static_cast<unsigned char>(*start)) || *start == '.')) Fail("a number, $parameter or '('");
    i_ += static_cast<size_t>(end - start);
    return v;
  }

  const std::string& s_;
  const std::map<std::string, std::string>& params_;
  size_t i_ = 0;
};

}  // namespace osc_expression_detail

double EvaluateExpression(const std::string& expr, const std::map<std::string, std::string>& params) {
  return osc_expression_detail::Parser(expr, params).Run();
}

}  // namespace platoon::scenario
