// The Foxglove WebSocket protocol core of `platoon bridge` (bridge_core.hpp).
#include "bridge_core.hpp"

#include "platoon/log/session_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace platoon::bridge {
namespace bridge_core_detail {

using session_log::JsonQuote;

// A recursive-descent JSON reader over `s`.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  std::optional<JsonValue> Document(std::string& error) {
    JsonValue v;
    if (!Value(v, 0) || (Space(), pos_ != s_.size() && Fail("the end of the text"))) {
      error = error_;
      return std::nullopt;
    }
    return v;
  }

 private:
  bool Fail(std::string_view expected) {
    if (!error_.empty()) return false;
    const std::string got = pos_ >= s_.size() ? std::string("the end of the text")
                                              : fmt::format("'{}'", s_.substr(pos_, std::min<size_t>(12, s_.size() - pos_)));
    error_ = fmt::format("at byte {}: expected {}, got {}", pos_, expected, got);
    return false;
  }
  void Space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Fail("a JSON value");
    pos_ += word.size();
    return true;
  }
  bool Value(JsonValue& v, int depth) {
    if (depth > 64) return Fail("nesting of at most 64 levels");
    Space();
    if (pos_ >= s_.size()) return Fail("a JSON value");
    const char c = s_[pos_];
    if (c == '{') return Object(v, depth);
    if (c == '[') return Array(v, depth);
    if (c == '"') {
      v.type = JsonValue::Type::kString;
      return String(v.text);
    }
    if (c == 't') {
      v.type = JsonValue::Type::kBool;
      v.boolean = true;
      return Literal("true");
    }
    if (c == 'f') {
      v.type = JsonValue::Type::kBool;
      return Literal("false");
    }
    if (c == 'n') return Literal("null");
    return Number(v);
  }
  bool Number(JsonValue& v) {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > from;
    };
    if (!digits()) return (pos_ = start, Fail("a JSON value"));
    if (pos_ < s_.size() && s_[pos_] == '.' && (++pos_, !digits())) return Fail("digits after the decimal point");
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) return Fail("digits of the exponent");
    }
    v.type = JsonValue::Type::kNumber;
    v.number = std::strtod(std::string(s_.substr(start, pos_ - start)).c_str(), nullptr);
    return true;
  }
  static void Utf8(std::string& out, uint32_t cp) {
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
  bool Hex4(uint32_t& cp) {
    if (pos_ + 4 > s_.size()) return Fail("four hex digits after \\u");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') cp |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') cp |= static_cast<uint32_t>(h - 'A' + 10);
      else return (--pos_, Fail("four hex digits after \\u"));
    }
    return true;
  }
  bool String(std::string& out) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= s_.size()) return Fail("a closing '\"'");
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return (--pos_, Fail("no control character inside a string"));
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return Fail("an escape after '\\'");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(cp)) return false;
          // A surrogate pair makes one code point; a lone surrogate becomes U+FFFD.
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t low = 0;
            if (!Hex4(low)) return false;
            cp = (low >= 0xDC00 && low < 0xE000) ? 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00) : 0xFFFD;
          } else if (cp >= 0xD800 && cp < 0xE000) {
            cp = 0xFFFD;
          }
          Utf8(out, cp);
          break;
        }
        default: return (--pos_, Fail("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u"));
      }
    }
  }
  bool Array(JsonValue& v, int depth) {
    v.type = JsonValue::Type::kArray;
    ++pos_;
    Space();
    if (pos_ < s_.size() && s_[pos_] == ']') return (++pos_, true);
    while (true) {
      JsonValue item;
      if (!Value(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
      Space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') return (++pos_, true);
      return Fail("',' or ']'");
    }
  }
  bool Object(JsonValue& v, int depth) {
    v.type = JsonValue::Type::kObject;
    ++pos_;
    Space();
    if (pos_ < s_.size() && s_[pos_] == '}') return (++pos_, true);
    while (true) {
      Space();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("a field name in quotes");
      std::string key;
      if (!String(key)) return false;
      Space();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("':'");
      ++pos_;
      JsonValue item;
      if (!Value(item, depth + 1)) return false;
      v.fields.emplace_back(std::move(key), std::move(item));
      Space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') return (++pos_, true);
      return Fail("',' or '}'");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

void PutLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// A finite JSON number as an integer (exact, below 2^53) or a shortest round-trip decimal.
std::string NumberText(double v) {
  if (std::trunc(v) == v && std::fabs(v) < 9007199254740992.0) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

// The subscription or parameter-name lists: an array of `what` each; a message when not.
bool IsArrayOf(const JsonValue* v, JsonValue::Type type) {
  return v && v->type == JsonValue::Type::kArray &&
         std::all_of(v->items.begin(), v->items.end(), [&](const JsonValue& i) { return i.type == type; });
}

// A protocol id: a non-negative integer that fits uint32.
bool IsId(const JsonValue* v) {
  return v && v->type == JsonValue::Type::kNumber && v->number >= 0 && v->number <= 4294967295.0 &&
         std::trunc(v->number) == v->number;
}

void Say(Effects& fx, ConnId conn, int level, const std::string& message) {
  fx.texts.push_back(TextOut{conn, StatusJson(level, message)});
}

}  // namespace bridge_core_detail

using namespace bridge_core_detail;

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (type != Type::kObject) return nullptr;
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

std::optional<JsonValue> ParseJson(std::string_view text, std::string& error) { return Reader(text).Document(error); }

std::string StatusJson(int level, std::string_view message) {
  return fmt::format("{{\"op\":\"status\",\"level\":{},\"message\":{}}}", level, JsonQuote(message));
}

std::string MessageDataFrame(uint32_t subscription_id, uint64_t log_time_ns, std::string_view payload) {
  std::string out;
  out.reserve(13 + payload.size());
  out += static_cast<char>(kOpMessageData);
  PutLe(out, subscription_id, 4);
  PutLe(out, log_time_ns, 8);
  out.append(payload);
  return out;
}

std::string TimeFrame(uint64_t time_ns) {
  std::string out;
  out += static_cast<char>(kOpTime);
  PutLe(out, time_ns, 8);
  return out;
}

std::string ParamValueJson(std::string_view v, std::string_view type) {
  // Strings: a TOML basic string's escapes are JSON's (\U aside); a literal string has none.
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
    std::string error;
    if (auto j = ParseJson(v, error); j && j->type == JsonValue::Type::kString) return JsonQuote(j->text);
    return JsonQuote(v.substr(1, v.size() - 2));
  }
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') return JsonQuote(v.substr(1, v.size() - 2));
  if (type == "string") return JsonQuote(v);
  if (v == "true" || v == "false") return std::string(v);
  // Numbers (TOML allows '_' between digits); inf and nan have no JSON form and go as text.
  std::string digits(v);
  std::erase(digits, '_');
  char* end = nullptr;
  const double d = std::strtod(digits.c_str(), &end);
  if (!digits.empty() && end == digits.c_str() + digits.size() && std::isfinite(d) &&
      digits.find_first_of("xXoObB") == std::string::npos)
    return NumberText(d);
  return JsonQuote(v);
}

std::optional<std::string> TomlLiteralOf(const JsonValue& value, std::string& error) {
  switch (value.type) {
    case JsonValue::Type::kBool: return std::string(value.boolean ? "true" : "false");
    case JsonValue::Type::kNumber: return NumberText(value.number);
    case JsonValue::Type::kString: return JsonQuote(value.text);  // JSON's escapes are TOML's
    case JsonValue::Type::kNull:
      error = "expected a value (platoon parameters cannot be unset), got none";
      return std::nullopt;
    default:
      error = "expected a number, boolean or string (platoon parameters hold one value), got an array or object";
      return std::nullopt;
  }
}

bool TokenMatches(std::string_view presented, std::string_view expected) {
  // Every byte of the expected token is looked at whatever the presented one holds.
  unsigned diff = presented.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char p = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff |= p ^ static_cast<unsigned char>(expected[i]);
  }
  return diff == 0 && !expected.empty();
}

std::optional<std::string> QueryValue(std::string_view resource, std::string_view key) {
  const size_t q = resource.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = resource.substr(q + 1);
  if (const size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    std::string out;
    const std::string_view raw = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '+') {
        out += ' ';
      } else if (raw[i] == '%' && i + 2 < raw.size() + 0 && std::isxdigit(static_cast<unsigned char>(raw[i + 1])) &&
                 std::isxdigit(static_cast<unsigned char>(raw[i + 2]))) {
        out += static_cast<char>(std::stoi(std::string(raw.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        out += raw[i];
      }
    }
    return out;
  }
  return std::nullopt;
}

// --- the core ---------------------------------------------------------------------------------------

BridgeCore::BridgeCore(std::string name, std::string session_id)
    : name_(std::move(name)), session_id_(std::move(session_id)) {}

std::string BridgeCore::AdvertiseJson(const std::vector<uint32_t>& ids) const {
  std::string out = "{\"op\":\"advertise\",\"channels\":[";
  bool first = true;
  for (uint32_t id : ids) {
    const auto it = channels_.find(id);
    if (it == channels_.end()) continue;
    const auto& c = it->second;
    out += fmt::format("{}{{\"id\":{},\"topic\":{},\"encoding\":{},\"schemaName\":{},\"schema\":{},\"schemaEncoding\":{}}}",
                       first ? "" : ",", id, JsonQuote(c.topic), JsonQuote(c.encoding), JsonQuote(c.schema_name),
                       JsonQuote(c.schema), JsonQuote(c.schema_encoding));
    first = false;
  }
  return out + "]}";
}

Effects BridgeCore::Open(ConnId conn) {
  conns_[conn] = Conn{};
  Effects fx;
  fx.texts.push_back(TextOut{
      conn, fmt::format("{{\"op\":\"serverInfo\",\"name\":{},\"capabilities\":[\"parameters\",\"parametersSubscribe\","
                        "\"time\"],\"metadata\":{{\"source\":\"platoon bridge\"}},\"sessionId\":{}}}",
                        JsonQuote(name_), JsonQuote(session_id_))});
  std::vector<uint32_t> ids;
  for (const auto& [id, c] : channels_) ids.push_back(id);
  // At least one advertise goes to every new client, empty when the session has no channel yet.
  fx.texts.push_back(TextOut{conn, AdvertiseJson(ids)});
  return fx;
}

void BridgeCore::Close(ConnId conn) {
  conns_.erase(conn);
  // Its requests in flight are answered to no one.
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (it->second.conn != conn) {
      ++it;
      continue;
    }
    std::erase_if(pending_, [&](const auto& kv) { return kv.second == it->first; });
    it = groups_.erase(it);
  }
}

Effects BridgeCore::OnBinary(ConnId conn) {
  Effects fx;
  Say(fx, conn, kWarning, "binary messages ignored: this server takes no client publishing (no clientPublish capability)");
  return fx;
}

Effects BridgeCore::OnText(ConnId conn, std::string_view text) {
  Effects fx;
  const auto c = conns_.find(conn);
  if (c == conns_.end()) return fx;
  std::string error;
  const auto op = ParseJson(text, error);
  if (!op) {
    Say(fx, conn, kError, "malformed JSON " + error);
    return fx;
  }
  const JsonValue* name = op->Find("op");
  if (!name || name->type != JsonValue::Type::kString) {
    Say(fx, conn, kError, "expected a JSON object with a string field \"op\", got none");
    return fx;
  }
  const std::string& o = name->text;
  if (o == "subscribe") return Subscribe(conn, c->second, *op);
  if (o == "unsubscribe") return Unsubscribe(conn, c->second, *op);
  if (o == "getParameters") return GetParameters(conn, *op);
  if (o == "setParameters") return SetParameters(conn, *op);
  if (o == "subscribeParameterUpdates") return ParamUpdates(conn, c->second, *op, true);
  if (o == "unsubscribeParameterUpdates") return ParamUpdates(conn, c->second, *op, false);
  Say(fx, conn, kError,
      fmt::format("unsupported operation '{}': expected subscribe, unsubscribe, getParameters, setParameters, "
                  "subscribeParameterUpdates or unsubscribeParameterUpdates",
                  o));
  return fx;
}

Effects BridgeCore::Subscribe(ConnId conn, Conn& c, const JsonValue& op) {
  Effects fx;
  const JsonValue* subs = op.Find("subscriptions");
  if (!IsArrayOf(subs, JsonValue::Type::kObject)) {
    Say(fx, conn, kError, "subscribe: expected \"subscriptions\": [{\"id\": N, \"channelId\": N}, ...]");
    return fx;
  }
  for (const auto& s : subs->items) {
    const JsonValue* id = s.Find("id");
    const JsonValue* channel = s.Find("channelId");
    if (!IsId(id) || !IsId(channel)) {
      Say(fx, conn, kError, "subscribe: expected integer \"id\" and \"channelId\" in [0, 4294967295] in each subscription");
      continue;
    }
    const auto sub_id = static_cast<uint32_t>(id->number);
    const auto ch = static_cast<uint32_t>(channel->number);
    if (!channels_.count(ch)) {
      Say(fx, conn, kError, fmt::format("subscribe: unknown channel id {} (subscription {})", ch, sub_id));
      continue;
    }
    if (c.subscriptions.count(sub_id)) {
      Say(fx, conn, kError, fmt::format("subscribe: subscription id {} is already in use", sub_id));
      continue;
    }
    if (std::any_of(c.subscriptions.begin(), c.subscriptions.end(), [&](const auto& kv) { return kv.second == ch; })) {
      Say(fx, conn, kError, fmt::format("subscribe: channel {} is already subscribed by this client", ch));
      continue;
    }
    c.subscriptions[sub_id] = ch;
    fx.subscribed.push_back(Subscribed{conn, sub_id, ch});
  }
  return fx;
}

Effects BridgeCore::Unsubscribe(ConnId conn, Conn& c, const JsonValue& op) {
  Effects fx;
  const JsonValue* ids = op.Find("subscriptionIds");
  if (!IsArrayOf(ids, JsonValue::Type::kNumber)) {
    Say(fx, conn, kError, "unsubscribe: expected \"subscriptionIds\": [N, ...]");
    return fx;
  }
  for (const auto& id : ids->items)
    if (!IsId(&id) || !c.subscriptions.erase(static_cast<uint32_t>(id.number)))
      Say(fx, conn, kWarning, fmt::format("unsubscribe: no subscription {}", NumberText(id.number)));
  return fx;
}

Effects BridgeCore::GetParameters(ConnId conn, const JsonValue& op) {
  Effects fx;
  const JsonValue* names = op.Find("parameterNames");
  const JsonValue* id = op.Find("id");
  if (!IsArrayOf(names, JsonValue::Type::kString) || (id && id->type != JsonValue::Type::kString)) {
    Say(fx, conn, kError, "getParameters: expected \"parameterNames\": [\"path\", ...] and an optional string \"id\"");
    return fx;
  }
  const uint64_t g = next_group_++;
  Group group{conn, id ? std::optional<std::string>(id->text) : std::nullopt, false, 0, {}, {}};
  // No names: every parameter of the server and its nodes.
  if (names->items.empty()) {
    const uint64_t r = next_request_++;
    fx.asks.push_back(ParamAsk{r, protocol::ParamListRequest{"", r}});
    pending_[r] = g;
    group.waiting = 1;
  }
  for (const auto& n : names->items) {
    const uint64_t r = next_request_++;
    fx.asks.push_back(ParamAsk{r, protocol::ParamGet{n.text, r}});
    pending_[r] = g;
    ++group.waiting;
  }
  groups_[g] = std::move(group);
  return fx;
}

Effects BridgeCore::SetParameters(ConnId conn, const JsonValue& op) {
  Effects fx;
  const JsonValue* params = op.Find("parameters");
  const JsonValue* id = op.Find("id");
  if (!IsArrayOf(params, JsonValue::Type::kObject) || (id && id->type != JsonValue::Type::kString)) {
    Say(fx, conn, kError,
        "setParameters: expected \"parameters\": [{\"name\": \"path\", \"value\": V}, ...] and an optional string \"id\"");
    return fx;
  }
  const uint64_t g = next_group_++;
  Group group{conn, id ? std::optional<std::string>(id->text) : std::nullopt, true, 0, {}, {}};
  for (const auto& p : params->items) {
    const JsonValue* name = p.Find("name");
    if (!name || name->type != JsonValue::Type::kString) {
      group.errors.push_back("setParameters: expected a string \"name\" in each parameter");
      continue;
    }
    std::string error;
    const JsonValue* value = p.Find("value");
    const auto literal = value ? TomlLiteralOf(*value, error) : std::nullopt;
    if (!literal) {
      group.errors.push_back(fmt::format("{}: {}", name->text, value ? error : "expected a \"value\", got none"));
      continue;
    }
    const uint64_t r = next_request_++;
    fx.asks.push_back(ParamAsk{r, protocol::ParamSet{name->text, *literal, r}});
    pending_[r] = g;
    ++group.waiting;
  }
  groups_[g] = std::move(group);
  // Nothing to ask: answered at once (the errors, and the empty values when an id asks for them).
  if (groups_[g].waiting == 0) {
    ++groups_[g].waiting;
    const uint64_t r = next_request_++;
    pending_[r] = g;
    Effects now = Answered(r, nullptr, "", nullptr);
    for (auto& t : now.texts) fx.texts.push_back(std::move(t));
  }
  return fx;
}

Effects BridgeCore::ParamUpdates(ConnId conn, Conn& c, const JsonValue& op, bool subscribe) {
  Effects fx;
  const JsonValue* names = op.Find("parameterNames");
  if (!IsArrayOf(names, JsonValue::Type::kString)) {
    Say(fx, conn, kError, fmt::format("{}ParameterUpdates: expected \"parameterNames\": [\"path\", ...]",
                                      subscribe ? "subscribe" : "unsubscribe"));
    return fx;
  }
  if (names->items.empty()) {
    c.all_param_updates = subscribe;
    if (!subscribe) c.param_updates.clear();
  }
  for (const auto& n : names->items) {
    if (subscribe) c.param_updates.insert(n.text);
    else c.param_updates.erase(n.text);
  }
  return fx;
}

Effects BridgeCore::OnParamList(const protocol::ParamList& list) {
  Effects fx;
  std::string error;
  // Nodes that did not answer: the list is incomplete, and the client is told.
  for (const auto& e : list.errors) error += (error.empty() ? "" : "; ") + e;
  return Answered(list.request_id, nullptr, error.empty() ? "" : "incomplete parameter list: " + error, &list.params);
}

Effects BridgeCore::OnParamReply(const protocol::ParamReply& reply) {
  return Answered(reply.request_id, reply.ok ? &reply.param : nullptr,
                  reply.ok ? "" : (reply.error.empty() ? reply.param.path + ": refused" : reply.error), nullptr);
}

Effects BridgeCore::Answered(uint64_t request_id, const protocol::Parameter* value, const std::string& error,
                             const std::vector<protocol::Parameter>* list) {
  Effects fx;
  const auto p = pending_.find(request_id);
  if (p == pending_.end()) return fx;
  const auto g = groups_.find(p->second);
  pending_.erase(p);
  if (g == groups_.end()) return fx;
  Group& group = g->second;
  if (value) group.values.push_back(*value);
  if (list) group.values.insert(group.values.end(), list->begin(), list->end());
  if (!error.empty()) group.errors.push_back(error);
  if (--group.waiting > 0) return fx;
  // The last answer: the server's refusals as error statuses, then the values.
  for (const auto& e : group.errors) Say(fx, group.conn, kError, (group.set ? "setParameters: " : "getParameters: ") + e);
  if (!group.set || group.id || !group.values.empty()) {
    std::string out = "{\"op\":\"parameterValues\",\"parameters\":[";
    for (size_t i = 0; i < group.values.size(); ++i) {
      const auto& v = group.values[i];
      out += fmt::format("{}{{\"name\":{},\"value\":{}{}}}", i ? "," : "", JsonQuote(v.path), ParamValueJson(v.value, v.type),
                         v.type == "float" ? ",\"type\":\"float64\"" : "");
    }
    out += "]";
    if (group.id) out += ",\"id\":" + JsonQuote(*group.id);
    fx.texts.push_back(TextOut{group.conn, out + "}"});
  }
  groups_.erase(g);
  return fx;
}

Effects BridgeCore::OnParamChanged(const std::string& path, const std::string& toml_value) {
  Effects fx;
  const std::string text = fmt::format("{{\"op\":\"parameterValues\",\"parameters\":[{{\"name\":{},\"value\":{}}}]}}",
                                       JsonQuote(path), ParamValueJson(toml_value, ""));
  for (const auto& [conn, c] : conns_)
    if (c.all_param_updates || c.param_updates.count(path)) fx.texts.push_back(TextOut{conn, text});
  return fx;
}

Effects BridgeCore::SetChannels(const std::vector<ChannelSpec>& specs) {
  Effects fx;
  std::vector<uint32_t> gone, added;
  for (const auto& [id, c] : channels_)
    if (std::find(specs.begin(), specs.end(), c) == specs.end()) gone.push_back(id);
  for (uint32_t id : gone) channels_.erase(id);
  for (const auto& s : specs) {
    const bool known = std::any_of(channels_.begin(), channels_.end(), [&](const auto& kv) { return kv.second == s; });
    if (known) continue;
    channels_[next_channel_] = s;
    added.push_back(next_channel_++);
  }
  if (gone.empty() && added.empty()) return fx;
  std::string unadvertise;
  if (!gone.empty()) {
    unadvertise = "{\"op\":\"unadvertise\",\"channelIds\":[";
    for (size_t i = 0; i < gone.size(); ++i) unadvertise += fmt::format("{}{}", i ? "," : "", gone[i]);
    unadvertise += "]}";
  }
  const std::string advertise = added.empty() ? std::string() : AdvertiseJson(added);
  for (auto& [conn, c] : conns_) {
    std::erase_if(c.subscriptions,
                  [&](const auto& kv) { return std::find(gone.begin(), gone.end(), kv.second) != gone.end(); });
    if (!unadvertise.empty()) fx.texts.push_back(TextOut{conn, unadvertise});
    if (!advertise.empty()) fx.texts.push_back(TextOut{conn, advertise});
  }
  return fx;
}

std::vector<Target> BridgeCore::Subscribers(uint32_t channel_id) const {
  std::vector<Target> out;
  for (const auto& [conn, c] : conns_)
    for (const auto& [sub, ch] : c.subscriptions)
      if (ch == channel_id) out.push_back(Target{conn, sub});
  return out;
}

std::optional<uint32_t> BridgeCore::ChannelOf(std::string_view topic) const {
  for (const auto& [id, c] : channels_)
    if (c.topic == topic) return id;
  return std::nullopt;
}

}  // namespace platoon::bridge
