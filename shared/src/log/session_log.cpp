#include "platoon/log/session_log.hpp"

#include "platoon/protocol/codec.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace platoon::session_log {

std::string DataTopic(std::string_view stream_id) { return std::string(kDataTopicPrefix) + std::string(stream_id); }

std::string JsonQuote(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(ch);
        }
    }
  }
  out += "\"";
  return out;
}

std::string SessionInfoJson(const SessionInfo& info) {
  return "{\"name\":" + JsonQuote(info.name) + ",\"config\":" + JsonQuote(info.config) +
         ",\"config_path\":" + JsonQuote(info.config_path) + ",\"recorder\":" + JsonQuote(info.recorder) + "}";
}

namespace {
// Reads the JSON string starting at json[at] == '"'; advances `at` past it. False when malformed.
bool ReadJsonString(std::string_view json, size_t& at, std::string& out) {
  if (at >= json.size() || json[at] != '"') return false;
  out.clear();
  for (size_t i = at + 1; i < json.size(); ++i) {
    char c = json[i];
    if (c == '"') {
      at = i + 1;
      return true;
    }
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= json.size()) return false;
    switch (c = json[i]) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'u': {
        if (i + 4 >= json.size()) return false;
        unsigned code = 0;
        for (int k = 1; k <= 4; ++k) {
          const char h = json[i + k];
          code = code * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        i += 4;
        if (code < 0x80) {
          out.push_back(static_cast<char>(code));
        } else if (code < 0x800) {
          out.push_back(static_cast<char>(0xC0 | (code >> 6)));
          out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        } else {
          out.push_back(static_cast<char>(0xE0 | (code >> 12)));
          out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
          out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        }
        break;
      }
      default: out.push_back(c);
    }
  }
  return false;
}
}  // namespace

std::optional<SessionInfo> ParseSessionInfo(std::string_view json) {
  size_t at = json.find_first_not_of(" \t\r\n");
  if (at == std::string_view::npos || json[at] != '{') return std::nullopt;
  SessionInfo info;
  ++at;
  // Flat objects of string values are read; other values are skipped to the next key.
  while (at < json.size()) {
    at = json.find('"', at);
    if (at == std::string_view::npos) break;
    std::string key, value;
    if (!ReadJsonString(json, at, key)) break;
    at = json.find_first_not_of(" \t\r\n", at);
    if (at == std::string_view::npos || json[at] != ':') break;
    at = json.find_first_not_of(" \t\r\n", at + 1);
    if (at == std::string_view::npos) break;
    if (json[at] == '"') {
      if (!ReadJsonString(json, at, value)) break;
      if (key == "name") info.name = value;
      else if (key == "config") info.config = value;
      else if (key == "config_path") info.config_path = value;
      else if (key == "recorder") info.recorder = value;
    } else {
      at = json.find_first_of(",}", at);
      if (at == std::string_view::npos) break;
    }
    at = json.find_first_of(",}", at);
    if (at == std::string_view::npos || json[at] == '}') break;
    ++at;
  }
  return info;
}

uint64_t LogTimeNs(int64_t sim_ns) { return sim_ns > 0 ? static_cast<uint64_t>(sim_ns) : 0; }

std::unique_ptr<Writer> Writer::Open(const std::string& path, std::string* error) {
  auto sink = mcap::FileSink::Open(path, error);
  if (!sink) return nullptr;
  auto writer = std::make_unique<Writer>(*sink);
  writer->file_ = std::move(sink);  // the writer keeps a reference to *sink, which does not move
  return writer;
}

Writer::Writer(mcap::Sink& sink) : writer_(sink) {}

Writer::Writer(mcap::Sink& sink, const mcap::WriterDef& def) : writer_(sink, def) {}

std::unique_ptr<Writer> Writer::Open(const std::string& path, std::string* error, const mcap::WriterDef& def) {
  auto sink = mcap::FileSink::Open(path, error);
  if (!sink) return nullptr;
  auto writer = std::make_unique<Writer>(*sink, def);
  writer->file_ = std::move(sink);  // the writer keeps a reference to *sink, which does not move
  return writer;
}

uint16_t Writer::SchemaId(std::string_view name, std::string_view encoding, std::string_view text) {
  if (name.empty()) return 0;
  if (auto it = schema_ids_.find(name); it != schema_ids_.end()) return it->second;
  const auto id = static_cast<uint16_t>(schema_ids_.size() + 1);
  mcap::Schema schema{id, std::string(name), std::string(encoding), std::vector<uint8_t>(text.begin(), text.end())};
  if (!writer_.AddSchema(schema).Ok()) return 0;  // the writer has stopped; its error is reported on write
  schema_ids_.emplace(std::string(name), id);
  return id;
}

mcap::Status Writer::Write(std::string_view topic, uint16_t schema_id, std::string_view message_encoding,
                           std::span<const uint8_t> data, int64_t sim_ns, int64_t publish_ns,
                           const std::map<std::string, std::string>* metadata) {
  if (!writer_.Error().empty()) return mcap::Status{writer_.Error()};
  auto it = channel_ids_.find(topic);
  if (it == channel_ids_.end()) {
    const auto id = static_cast<uint16_t>(channel_ids_.size() + 1);
    mcap::Channel channel{id, schema_id, std::string(topic), std::string(message_encoding), metadata ? *metadata : std::map<std::string, std::string>{}};
    if (auto s = writer_.AddChannel(channel); !s.Ok()) return s;
    it = channel_ids_.emplace(std::string(topic), id).first;
  }
  const uint64_t log_ns = LogTimeNs(sim_ns);
  mcap::MessageHeader header{it->second, ++sequences_[it->second], log_ns,
                             publish_ns > 0 ? static_cast<uint64_t>(publish_ns) : log_ns};
  auto status = writer_.WriteMessage(header, data);
  if (status.Ok()) ++counts_[it->first];
  return status;
}

mcap::Status Writer::WriteEnvelope(std::string_view topic, std::span<const uint8_t> envelope, int64_t sim_ns,
                                   int64_t publish_ns) {
  const uint16_t schema = SchemaId(kEnvelopeSchemaName, kCapnpEncoding, EnvelopeSchemaText());
  return Write(topic, schema, kCapnpEncoding, envelope, sim_ns, publish_ns);
}

mcap::Status Writer::WriteWorld(const protocol::WorldState& world) {
  const std::string bytes = protocol::Encode(world);
  return WriteEnvelope(kWorldTopic, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                       world.sim_time_ns, world.server_time_ns);
}

mcap::Status Writer::WriteJson(std::string_view topic, std::string_view schema_name, std::string_view json_schema,
                               std::string_view json, int64_t sim_ns, int64_t publish_ns) {
  const uint16_t schema = SchemaId(schema_name, json_schema.empty() ? "" : "jsonschema", json_schema);
  const auto* bytes = reinterpret_cast<const uint8_t*>(json.data());
  return Write(topic, schema, "json", std::span<const uint8_t>(bytes, json.size()), sim_ns, publish_ns);
}

mcap::Status Writer::WriteEncoded(std::string_view topic, std::string_view schema_name, std::string_view schema_encoding,
                                   std::string_view schema_text, std::string_view message_encoding,
                                   const std::map<std::string, std::string>& metadata, std::span<const uint8_t> data,
                                   int64_t sim_ns, int64_t publish_ns) {
  const uint16_t schema = SchemaId(schema_name, schema_encoding, schema_text);
  return Write(topic, schema, message_encoding, data, sim_ns, publish_ns, &metadata);
}

mcap::Status Writer::Flush() { return writer_.Flush(); }
mcap::Status Writer::Close() { return writer_.Close(); }

mcap::ReadResult Read(const std::string& path, const std::function<void(const Entry&)>& on_entry) {
  return mcap::Read(path, mcap::ChannelMessageFn([&](const mcap::Channel& c, const mcap::Message& m) {
    on_entry(Entry{c.topic, c.message_encoding, m.log_time_ns, m.publish_time_ns,
                   std::span<const uint8_t>(m.data.data(), m.data.size())});
  }));
}

mcap::ReadResult ReadStream(const std::string& path, const ReadOptions& options,
                            const std::function<void(const Entry&)>& on_entry) {
  mcap::ReadResult result;
  std::string error;
  auto reader = mcap::StreamReader::Open(path, &error);
  if (!reader) {
    result.problems.push_back({0, error});
    return result;
  }
  if (!options.topics.empty()) reader->SetTopics(options.topics);
  reader->Seek(options.from_ns);
  mcap::Message m;
  uint64_t reported = 0;
  while (reader->Next(m)) {
    if (m.log_time_ns > options.until_ns) break;
    if (options.progress && reader->BytesRead() != reported) {
      reported = reader->BytesRead();
      options.progress(reported, reader->FileSize());
    }
    const mcap::Channel* channel = reader->ChannelOf(m.channel_id);
    if (!channel) continue;
    on_entry(Entry{channel->topic, channel->message_encoding, m.log_time_ns, m.publish_time_ns,
                   std::span<const uint8_t>(m.data.data(), m.data.size())});
  }
  if (options.progress) options.progress(reader->FileSize(), reader->FileSize());
  result.summary_found = reader->HasSummary();
  result.schemas = reader->Schemas();
  result.channels = reader->Channels();
  result.statistics = reader->Stats();
  result.chunk_indexes = reader->Chunks();
  result.problems = reader->Problems();
  result.complete = result.summary_found && result.problems.empty();
  return result;
}

}  // namespace platoon::session_log
