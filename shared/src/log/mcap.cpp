#include "platoon/log/mcap.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unordered_map>

#include <fcntl.h>
#include <unistd.h>

namespace platoon::mcap {
namespace {

// Leading and trailing magic: 0x89 "MCAP" major version '0' "\r\n".
constexpr std::array<uint8_t, 8> kMagic = {0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'};

// Record opcodes of the specification.
enum Op : uint8_t {
  kHeader = 0x01, kFooter = 0x02, kSchema = 0x03, kChannel = 0x04, kMessage = 0x05, kChunk = 0x06,
  kMessageIndex = 0x07, kChunkIndex = 0x08, kAttachment = 0x09, kAttachmentIndex = 0x0A,
  kStatistics = 0x0B, kMetadata = 0x0C, kMetadataIndex = 0x0D, kSummaryOffset = 0x0E, kDataEnd = 0x0F,
};

// Opcode (1) + content length (8).
constexpr uint64_t kRecordPrefix = 9;
// Footer content: summary_start, summary_offset_start, summary_crc.
constexpr uint64_t kFooterContent = 8 + 8 + 4;
// Message content before its data: channel id, sequence, log time, publish time.
constexpr uint64_t kMessageFixed = 2 + 4 + 8 + 8;

std::string OpName(uint8_t op) {
  switch (op) {
    case kHeader: return "header";
    case kFooter: return "footer";
    case kSchema: return "schema";
    case kChannel: return "channel";
    case kMessage: return "message";
    case kChunk: return "chunk";
    case kMessageIndex: return "message index";
    case kChunkIndex: return "chunk index";
    case kAttachment: return "attachment";
    case kAttachmentIndex: return "attachment index";
    case kStatistics: return "statistics";
    case kMetadata: return "metadata";
    case kMetadataIndex: return "metadata index";
    case kSummaryOffset: return "summary offset";
    case kDataEnd: return "data end";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "record with opcode 0x%02x", op);
      return buf;
    }
  }
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// The reflected zlib CRC32 table, built at compile time.
constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

// Little-endian serialization into a growing buffer.
class Out {
 public:
  explicit Out(std::vector<uint8_t>& buf) : buf_(buf) {}
  void U8(uint8_t v) { buf_.push_back(v); }
  void U16(uint16_t v) { Le(v, 2); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void Raw(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    buf_.insert(buf_.end(), p, p + size);
  }
  void Str(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    Raw(s.data(), s.size());
  }
  void Bytes32(const std::vector<uint8_t>& b) {
    U32(static_cast<uint32_t>(b.size()));
    Raw(b.data(), b.size());
  }
  void StringMap(const std::map<std::string, std::string>& m) {
    uint64_t len = 0;
    for (const auto& [k, v] : m) len += 8 + k.size() + v.size();
    U32(static_cast<uint32_t>(len));
    for (const auto& [k, v] : m) {
      Str(k);
      Str(v);
    }
  }
  void IdMap(const std::map<uint16_t, uint64_t>& m) {
    U32(static_cast<uint32_t>(m.size() * 10));
    for (const auto& [k, v] : m) {
      U16(k);
      U64(v);
    }
  }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>& buf_;
};

uint64_t LoadLe(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Bounds-checked little-endian parsing of one record's content. A read past the end sets !ok and
// yields zeros, so a parser checks ok once at the end.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> b) : b_(b) {}
  bool ok() const { return ok_; }
  uint64_t Left() const { return b_.size() - pos_; }
  uint64_t Pos() const { return pos_; }
  uint8_t U8() { return static_cast<uint8_t>(Fixed(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Fixed(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  std::span<const uint8_t> Take(uint64_t n) {
    if (!ok_ || n > Left()) {
      ok_ = false;
      return {};
    }
    auto s = b_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  std::string Str() {
    auto s = Take(U32());
    return std::string(s.begin(), s.end());
  }
  std::vector<uint8_t> Bytes32() {
    auto s = Take(U32());
    return std::vector<uint8_t>(s.begin(), s.end());
  }
  std::map<std::string, std::string> StringMap() {
    std::map<std::string, std::string> m;
    Cursor inner(Take(U32()));
    while (ok_ && inner.ok() && inner.Left() > 0) {
      std::string k = inner.Str();
      std::string v = inner.Str();
      if (inner.ok()) m[k] = v;
    }
    if (!inner.ok()) ok_ = false;
    return m;
  }
  std::map<uint16_t, uint64_t> IdMap() {
    std::map<uint16_t, uint64_t> m;
    Cursor inner(Take(U32()));
    while (ok_ && inner.ok() && inner.Left() > 0) {
      uint16_t k = inner.U16();
      uint64_t v = inner.U64();
      if (inner.ok()) m[k] = v;
    }
    if (!inner.ok()) ok_ = false;
    return m;
  }

 private:
  uint64_t Fixed(int n) {
    if (!ok_ || static_cast<uint64_t>(n) > Left()) {
      ok_ = false;
      return 0;
    }
    uint64_t v = LoadLe(b_.data() + pos_, n);
    pos_ += n;
    return v;
  }
  std::span<const uint8_t> b_;
  uint64_t pos_ = 0;
  bool ok_ = true;
};

std::vector<uint8_t> SchemaContent(const Schema& s) {
  std::vector<uint8_t> c;
  Out o(c);
  o.U16(s.id);
  o.Str(s.name);
  o.Str(s.encoding);
  o.Bytes32(s.data);
  return c;
}

std::vector<uint8_t> ChannelContent(const Channel& ch) {
  std::vector<uint8_t> c;
  Out o(c);
  o.U16(ch.id);
  o.U16(ch.schema_id);
  o.Str(ch.topic);
  o.Str(ch.message_encoding);
  o.StringMap(ch.metadata);
  return c;
}

std::optional<Schema> ParseSchema(std::span<const uint8_t> content) {
  Cursor c(content);
  Schema s;
  s.id = c.U16();
  s.name = c.Str();
  s.encoding = c.Str();
  s.data = c.Bytes32();
  if (!c.ok()) return std::nullopt;
  return s;
}

std::optional<Channel> ParseChannel(std::span<const uint8_t> content) {
  Cursor c(content);
  Channel ch;
  ch.id = c.U16();
  ch.schema_id = c.U16();
  ch.topic = c.Str();
  ch.message_encoding = c.Str();
  ch.metadata = c.StringMap();
  if (!c.ok()) return std::nullopt;
  return ch;
}

std::optional<Message> ParseMessage(std::span<const uint8_t> content) {
  if (content.size() < kMessageFixed) return std::nullopt;
  Cursor c(content);
  Message m;
  m.channel_id = c.U16();
  m.sequence = c.U32();
  m.log_time_ns = c.U64();
  m.publish_time_ns = c.U64();
  auto rest = c.Take(c.Left());
  m.data.assign(rest.begin(), rest.end());
  return m;
}

std::string At(uint64_t offset) { return " at byte " + std::to_string(offset); }

}  // namespace

uint32_t Crc32(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < size; ++i) c = kCrcTable[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return ~c;
}

// ---------------------------------------------------------------------------------------------
// Sinks
// ---------------------------------------------------------------------------------------------

std::unique_ptr<FileSink> FileSink::Open(const std::string& path, std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = path + ": cannot open for writing: " + std::strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<FileSink>(new FileSink(fd, path));
}

FileSink::~FileSink() {
  if (fd_ >= 0) ::close(fd_);
}

bool FileSink::Write(const void* data, size_t size) {
  // write(2) may write less than asked (a signal, a nearly full disk): loop until all is in.
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n < 0 ? std::strerror(errno) : "write returned 0 bytes";
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool FileSink::Flush() {
  // Nothing is buffered in the process: every Write already reached the kernel.
  return true;
}

bool MemorySink::Write(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  bytes_.insert(bytes_.end(), p, p + size);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

WriterDef DefaultWriterDef() { return WriterDef{}; }

Writer::Writer(Sink& sink, WriterDef def) : sink_(sink), def_(std::move(def)) {}

Status Writer::Fail(const std::string& what) {
  error_ = what;
  return {error_};
}

Status Writer::Emit(const void* data, size_t size) {
  if (!error_.empty()) return {error_};
  if (!sink_.Write(data, size)) {
    return Fail("mcap: writing " + sink_.Name() + " failed" + At(position_) + ": " + sink_.Error() +
                "; the writer has stopped (the file stays readable up to its last complete chunk)");
  }
  position_ += size;
  if (in_summary_) {
    summary_crc_ = Crc32(data, size, summary_crc_);
  } else {
    data_crc_ = Crc32(data, size, data_crc_);
  }
  return {};
}

Status Writer::EmitRecord(uint8_t opcode, const std::vector<uint8_t>& content) {
  std::vector<uint8_t> prefix;
  Out o(prefix);
  o.U8(opcode);
  o.U64(content.size());
  if (auto s = Emit(prefix.data(), prefix.size()); !s.Ok()) return s;
  return Emit(content.data(), content.size());
}

Status Writer::Start() {
  if (!error_.empty()) return {error_};
  if (closed_) return {"mcap: writer for " + sink_.Name() + " is closed"};
  if (started_) return {};
  started_ = true;
  if (auto s = Emit(kMagic.data(), kMagic.size()); !s.Ok()) return s;
  std::vector<uint8_t> header;
  Out o(header);
  o.Str(def_.profile);
  o.Str(def_.library);
  return EmitRecord(kHeader, header);
}

Status Writer::AddSchema(const Schema& schema) {
  if (auto s = Start(); !s.Ok()) return s;
  if (schema.id == 0) return {"mcap: schema '" + schema.name + "': id 0 is reserved for 'no schema'"};
  if (auto it = schemas_.find(schema.id); it != schemas_.end()) {
    if (it->second == schema) return {};
    return {"mcap: schema id " + std::to_string(schema.id) + " already added with different content"};
  }
  if (auto s = EmitRecord(kSchema, SchemaContent(schema)); !s.Ok()) return s;
  schemas_[schema.id] = schema;
  stats_.schema_count = static_cast<uint16_t>(schemas_.size());
  return {};
}

Status Writer::AddChannel(const Channel& channel) {
  if (auto s = Start(); !s.Ok()) return s;
  if (channel.schema_id != 0 && !schemas_.count(channel.schema_id)) {
    return {"mcap: channel '" + channel.topic + "' refers to schema " + std::to_string(channel.schema_id) +
            ", which was not added"};
  }
  if (auto it = channels_.find(channel.id); it != channels_.end()) {
    if (it->second == channel) return {};
    return {"mcap: channel id " + std::to_string(channel.id) + " already added with different content"};
  }
  if (auto s = EmitRecord(kChannel, ChannelContent(channel)); !s.Ok()) return s;
  channels_[channel.id] = channel;
  stats_.channel_count = static_cast<uint32_t>(channels_.size());
  stats_.channel_message_counts[channel.id] = 0;
  return {};
}

Status Writer::WriteMessage(const MessageHeader& header, std::span<const uint8_t> data) {
  if (auto s = Start(); !s.Ok()) return s;
  if (!channels_.count(header.channel_id)) {
    return {"mcap: message on channel " + std::to_string(header.channel_id) + ", which was not added"};
  }

  // Append the Message record to the open chunk and index it by (log time, offset in the chunk).
  const uint64_t offset = chunk_.size();
  Out o(chunk_);
  o.U8(kMessage);
  o.U64(kMessageFixed + data.size());
  o.U16(header.channel_id);
  o.U32(header.sequence);
  o.U64(header.log_time_ns);
  o.U64(header.publish_time_ns);
  o.Raw(data.data(), data.size());
  chunk_index_[header.channel_id].emplace_back(header.log_time_ns, offset);
  if (chunk_messages_ == 0) {
    chunk_start_ns_ = chunk_end_ns_ = header.log_time_ns;
  } else {
    chunk_start_ns_ = std::min(chunk_start_ns_, header.log_time_ns);
    chunk_end_ns_ = std::max(chunk_end_ns_, header.log_time_ns);
  }
  ++chunk_messages_;

  // File statistics.
  if (stats_.message_count == 0) {
    stats_.message_start_time_ns = stats_.message_end_time_ns = header.log_time_ns;
  } else {
    stats_.message_start_time_ns = std::min(stats_.message_start_time_ns, header.log_time_ns);
    stats_.message_end_time_ns = std::max(stats_.message_end_time_ns, header.log_time_ns);
  }
  ++stats_.message_count;
  ++stats_.channel_message_counts[header.channel_id];

  // The open chunk never spans chunk_span_ns of log time: this bounds what a kill -9 loses.
  if (chunk_.size() >= def_.chunk_size_bytes || chunk_end_ns_ - chunk_start_ns_ >= def_.chunk_span_ns) {
    return CloseChunk();
  }
  return {};
}

Status Writer::CloseChunk() {
  if (chunk_messages_ == 0) return {};
  WrittenChunk written;
  written.info.offset = position_;
  written.info.message_start_time_ns = chunk_start_ns_;
  written.info.message_end_time_ns = chunk_end_ns_;
  written.info.message_count = chunk_messages_;
  written.records_size = chunk_.size();

  // Chunk record: fixed fields, empty compression string, then the records (written without a copy).
  std::vector<uint8_t> prefix;
  Out o(prefix);
  const uint64_t content_size = 8 + 8 + 8 + 4 + 4 + 8 + chunk_.size();
  o.U8(kChunk);
  o.U64(content_size);
  o.U64(chunk_start_ns_);
  o.U64(chunk_end_ns_);
  o.U64(chunk_.size());
  o.U32(Crc32(chunk_.data(), chunk_.size()));
  o.Str("");
  o.U64(chunk_.size());
  if (auto s = Emit(prefix.data(), prefix.size()); !s.Ok()) return s;
  if (auto s = Emit(chunk_.data(), chunk_.size()); !s.Ok()) return s;
  written.info.length = kRecordPrefix + content_size;

  // One MessageIndex record per channel in the chunk, entries in log-time order.
  const uint64_t index_start = position_;
  for (auto& [channel_id, entries] : chunk_index_) {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<uint8_t> content;
    Out c(content);
    c.U16(channel_id);
    c.U32(static_cast<uint32_t>(entries.size() * 16));
    for (const auto& [log_time, offset] : entries) {
      c.U64(log_time);
      c.U64(offset);
    }
    written.message_index_offsets[channel_id] = position_;
    if (auto s = EmitRecord(kMessageIndex, content); !s.Ok()) return s;
  }
  written.message_index_length = position_ - index_start;

  written_chunks_.push_back(std::move(written));
  stats_.chunk_count = static_cast<uint32_t>(written_chunks_.size());
  chunk_.clear();
  chunk_index_.clear();
  chunk_messages_ = 0;
  return {};
}

Status Writer::Flush() {
  if (auto s = Start(); !s.Ok()) return s;
  if (auto s = CloseChunk(); !s.Ok()) return s;
  if (!sink_.Flush()) return Fail("mcap: flushing " + sink_.Name() + " failed: " + sink_.Error());
  return {};
}

Status Writer::Close() {
  if (auto s = Start(); !s.Ok()) return s;
  if (auto s = CloseChunk(); !s.Ok()) return s;

  // DataEnd carries the CRC of every byte before it.
  {
    std::vector<uint8_t> content;
    Out o(content);
    o.U32(data_crc_);
    if (auto s = EmitRecord(kDataEnd, content); !s.Ok()) return s;
  }

  // Summary section, grouped by opcode; each group is remembered for its SummaryOffset record.
  in_summary_ = true;
  summary_crc_ = 0;
  const uint64_t summary_start = position_;
  struct Group {
    uint8_t opcode;
    uint64_t start;
    uint64_t length;
  };
  std::vector<Group> groups;
  auto group = [&](uint8_t opcode, const std::vector<std::vector<uint8_t>>& records) -> Status {
    if (records.empty()) return {};
    const uint64_t start = position_;
    for (const auto& r : records) {
      if (auto s = EmitRecord(opcode, r); !s.Ok()) return s;
    }
    groups.push_back({opcode, start, position_ - start});
    return {};
  };
  std::vector<std::vector<uint8_t>> schemas, channels, statistics, chunk_indexes;
  for (const auto& [id, s] : schemas_) schemas.push_back(SchemaContent(s));
  for (const auto& [id, ch] : channels_) channels.push_back(ChannelContent(ch));
  {
    std::vector<uint8_t> c;
    Out o(c);
    o.U64(stats_.message_count);
    o.U16(stats_.schema_count);
    o.U32(stats_.channel_count);
    o.U32(0);  // attachments
    o.U32(0);  // metadata
    o.U32(stats_.chunk_count);
    o.U64(stats_.message_start_time_ns);
    o.U64(stats_.message_end_time_ns);
    o.IdMap(stats_.channel_message_counts);
    statistics.push_back(std::move(c));
  }
  for (const auto& w : written_chunks_) {
    std::vector<uint8_t> c;
    Out o(c);
    o.U64(w.info.message_start_time_ns);
    o.U64(w.info.message_end_time_ns);
    o.U64(w.info.offset);
    o.U64(w.info.length);
    o.IdMap(w.message_index_offsets);
    o.U64(w.message_index_length);
    o.Str("");
    o.U64(w.records_size);  // compressed size: no compression
    o.U64(w.records_size);
    chunk_indexes.push_back(std::move(c));
  }
  for (auto [opcode, records] : {std::pair{kSchema, &schemas}, std::pair{kChannel, &channels},
                                 std::pair{kStatistics, &statistics}, std::pair{kChunkIndex, &chunk_indexes}}) {
    if (auto s = group(opcode, *records); !s.Ok()) return s;
  }

  // Summary offsets, one per group.
  const uint64_t summary_offset_start = position_;
  for (const auto& g : groups) {
    std::vector<uint8_t> c;
    Out o(c);
    o.U8(g.opcode);
    o.U64(g.start);
    o.U64(g.length);
    if (auto s = EmitRecord(kSummaryOffset, c); !s.Ok()) return s;
  }

  // Footer: its CRC covers the summary, the summary offsets and the footer up to the CRC field.
  std::vector<uint8_t> footer;
  Out o(footer);
  o.U8(kFooter);
  o.U64(kFooterContent);
  o.U64(summary_start);
  o.U64(summary_offset_start);
  o.U32(Crc32(footer.data(), footer.size(), summary_crc_));
  o.Raw(kMagic.data(), kMagic.size());
  if (auto s = Emit(footer.data(), footer.size()); !s.Ok()) return s;
  if (!sink_.Flush()) return Fail("mcap: flushing " + sink_.Name() + " failed: " + sink_.Error());
  closed_ = true;
  return {};
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

std::string ReadResult::ProblemText() const {
  std::string text;
  for (const auto& p : problems) text += p.message + "\n";
  return text;
}

namespace {

// One pass over an MCAP image: the data section record by record, then the footer and summary.
class Scan {
 public:
  Scan(std::span<const uint8_t> bytes, const MessageFn& on_message, ReadResult& r)
      : b_(bytes), on_message_(on_message), r_(r) {}

  void Run() {
    if (!ReadMagic()) return;
    data_end_ = ScanData();
    const bool footer = ReadFooter();
    r_.complete = data_end_ && footer && r_.problems.empty();
  }

 private:
  void Problem(uint64_t offset, std::string message) { r_.problems.push_back({offset, std::move(message)}); }

  bool ReadMagic() {
    if (b_.empty()) {
      Problem(0, "empty file: not an MCAP file");
      return false;
    }
    const size_t n = std::min(b_.size(), kMagic.size());
    if (!std::equal(b_.begin(), b_.begin() + n, kMagic.begin())) {
      Problem(0, "not an MCAP file: the first bytes are not the MCAP magic \\x89MCAP0\\r\\n");
      return false;
    }
    if (b_.size() < kMagic.size()) {
      Problem(b_.size(), "truncated magic: the file ends after " + std::to_string(b_.size()) + " bytes");
      r_.stopped_at = b_.size();
      return false;
    }
    return true;
  }

  // Scans records from just after the magic to DataEnd; true when DataEnd was reached.
  bool ScanData() {
    uint64_t pos = kMagic.size();
    bool first = true;
    for (;;) {
      const uint64_t left = b_.size() - pos;
      if (left == 0) {
        Problem(pos, "file ends" + At(pos) + " after a complete record, with no data end and no footer "
                     "(the writer did not close it)");
        break;
      }
      if (left < kRecordPrefix) {
        Problem(pos, "truncated record header" + At(pos) + ": 9 bytes needed, " + std::to_string(left) + " left");
        break;
      }
      const uint8_t op = b_[pos];
      const uint64_t len = LoadLe(b_.data() + pos + 1, 8);
      if (len > left - kRecordPrefix) {
        Problem(pos, "truncated " + OpName(op) + At(pos) + ": the record needs " + std::to_string(len) +
                         " content bytes, the file has " + std::to_string(left - kRecordPrefix) + " more");
        break;
      }
      const uint64_t at = pos;
      const auto content = b_.subspan(pos + kRecordPrefix, len);
      pos += kRecordPrefix + len;

      if (first) {
        first = false;
        if (op == kHeader) {
          Cursor c(content);
          r_.profile = c.Str();
          r_.library = c.Str();
          if (!c.ok()) Problem(at, "malformed header" + At(at));
          continue;
        }
        Problem(at, "the first record" + At(at) + " is a " + OpName(op) + ", not a header");
      }
      switch (op) {
        case kSchema: AddSchema(at, content); break;
        case kChannel: AddChannel(at, content); break;
        case kMessage: AddMessage(at, content); break;
        case kChunk: ReadChunk(at, content); break;
        case kMessageIndex: CheckMessageIndex(at, content); break;
        case kAttachment:
        case kMetadata:
          break;  // valid data-section records platoon does not use
        case kDataEnd: {
          r_.stopped_at = pos;
          Cursor c(content);
          const uint32_t stored = c.U32();
          if (!c.ok()) {
            Problem(at, "malformed data end" + At(at));
          } else if (stored != 0) {
            const uint32_t computed = Crc32(b_.data(), at);
            if (computed != stored) {
              Problem(at, "data section CRC mismatch (data end" + At(at) + "): stored " + Hex32(stored) +
                              ", computed " + Hex32(computed));
            }
          }
          return true;
        }
        case kHeader:
        case kFooter:
        case kChunkIndex:
        case kAttachmentIndex:
        case kStatistics:
        case kMetadataIndex:
        case kSummaryOffset:
          Problem(at, "unexpected " + OpName(op) + At(at) + " in the data section (no data end before it)");
          r_.stopped_at = at;
          return false;
        default:
          break;  // unknown opcodes are skipped, as the specification asks
      }
    }
    r_.stopped_at = pos;
    return false;
  }

  void AddSchema(uint64_t at, std::span<const uint8_t> content) {
    auto s = ParseSchema(content);
    if (!s) return Problem(at, "malformed schema" + At(at));
    if (s->id == 0) return;  // invalid by the specification; ignored
    r_.schemas[s->id] = std::move(*s);
  }

  void AddChannel(uint64_t at, std::span<const uint8_t> content) {
    auto ch = ParseChannel(content);
    if (!ch) return Problem(at, "malformed channel" + At(at));
    r_.channels[ch->id] = std::move(*ch);
  }

  // Returns false when the record is not a valid message.
  bool AddMessage(uint64_t at, std::span<const uint8_t> content) {
    auto m = ParseMessage(content);
    if (!m) {
      Problem(at, "malformed message" + At(at) + ": " + std::to_string(content.size()) + " bytes, at least " +
                      std::to_string(kMessageFixed) + " needed");
      return false;
    }
    if (!r_.channels.count(m->channel_id)) {
      Problem(at, "message" + At(at) + " on channel " + std::to_string(m->channel_id) + ", which has no channel record before it");
    }
    ++message_count_;
    ++channel_counts_[m->channel_id];
    if (on_message_) {
      on_message_(*m);
    } else {
      r_.messages.push_back(std::move(*m));
    }
    return true;
  }

  void ReadChunk(uint64_t at, std::span<const uint8_t> content) {
    last_chunk_messages_.clear();
    last_chunk_good_ = false;
    Cursor c(content);
    ChunkInfo info;
    info.offset = at;
    info.length = kRecordPrefix + content.size();
    info.message_start_time_ns = c.U64();
    info.message_end_time_ns = c.U64();
    const uint64_t uncompressed_size = c.U64();
    const uint32_t stored_crc = c.U32();
    const std::string compression = c.Str();
    const auto records = c.Take(c.U64());
    if (!c.ok()) return Problem(at, "malformed chunk" + At(at) + ": a field runs past the record's end");
    if (!compression.empty()) {
      return Problem(at, "chunk" + At(at) + " is compressed with '" + compression +
                             "', which this reader does not read: its messages are skipped");
    }
    if (uncompressed_size != records.size()) {
      return Problem(at, "chunk" + At(at) + ": uncompressed size " + std::to_string(uncompressed_size) +
                             " does not match its " + std::to_string(records.size()) + " record bytes");
    }
    if (stored_crc != 0) {
      const uint32_t computed = Crc32(records.data(), records.size());
      if (computed != stored_crc) {
        return Problem(at, "damaged chunk" + At(at) + ": CRC stored " + Hex32(stored_crc) + ", computed " +
                               Hex32(computed) + "; its messages are skipped");
      }
    }

    // The records inside the chunk.
    uint64_t pos = 0;
    while (pos < records.size()) {
      const uint64_t left = records.size() - pos;
      const uint64_t inner_len = left >= kRecordPrefix ? LoadLe(records.data() + pos + 1, 8) : 0;
      if (left < kRecordPrefix || inner_len > left - kRecordPrefix) {
        Problem(at, "chunk" + At(at) + ": truncated record at chunk offset " + std::to_string(pos));
        break;
      }
      const uint8_t op = records[pos];
      const auto inner = records.subspan(pos + kRecordPrefix, inner_len);
      const uint64_t file_at = at + (info.length - records.size()) + pos;
      if (op == kSchema) {
        AddSchema(file_at, inner);
      } else if (op == kChannel) {
        AddChannel(file_at, inner);
      } else if (op == kMessage) {
        if (AddMessage(file_at, inner)) {
          ++info.message_count;
          last_chunk_messages_[pos] = {static_cast<uint16_t>(LoadLe(inner.data(), 2)), LoadLe(inner.data() + 6, 8)};
        }
      }
      pos += kRecordPrefix + inner_len;
    }
    last_chunk_good_ = true;
    r_.chunks.push_back(info);
  }

  // Checks that each entry of a MessageIndex points at a message of its channel in the chunk before.
  void CheckMessageIndex(uint64_t at, std::span<const uint8_t> content) {
    Cursor c(content);
    const uint16_t channel_id = c.U16();
    Cursor entries(c.Take(c.U32()));
    if (!c.ok() || entries.Left() % 16 != 0) return Problem(at, "malformed message index" + At(at));
    if (!last_chunk_good_) return;
    while (entries.Left() > 0) {
      const uint64_t log_time = entries.U64();
      const uint64_t offset = entries.U64();
      auto it = last_chunk_messages_.find(offset);
      if (it == last_chunk_messages_.end() || it->second.first != channel_id || it->second.second != log_time) {
        return Problem(at, "message index" + At(at) + " for channel " + std::to_string(channel_id) +
                               ": entry at chunk offset " + std::to_string(offset) +
                               " does not match a message of that channel and log time");
      }
    }
  }

  // Reads the footer and the summary; true when the footer is intact.
  bool ReadFooter() {
    const uint64_t size = b_.size();
    const uint64_t footer_len = kRecordPrefix + kFooterContent;
    if (size < kMagic.size() * 2 + footer_len ||
        !std::equal(kMagic.begin(), kMagic.end(), b_.end() - kMagic.size())) {
      Problem(size, "no footer: the file was not closed (cut by a crash or still being written); the data "
                    "section was read up to byte " + std::to_string(r_.stopped_at));
      return false;
    }
    const uint64_t footer_at = size - kMagic.size() - footer_len;
    if (b_[footer_at] != kFooter || LoadLe(b_.data() + footer_at + 1, 8) != kFooterContent) {
      Problem(footer_at, "no footer record before the trailing magic (expected" + At(footer_at) + ")");
      return false;
    }
    Cursor f(b_.subspan(footer_at + kRecordPrefix, kFooterContent));
    const uint64_t summary_start = f.U64();
    const uint64_t summary_offset_start = f.U64();
    const uint32_t summary_crc = f.U32();
    if (summary_start == 0) return true;  // a valid file without a summary
    if (data_end_ && r_.stopped_at != summary_start) {
      Problem(r_.stopped_at, "the data section ends" + At(r_.stopped_at) + " but the footer's summary starts" +
                                 At(summary_start));
    }

    // Summary bounds and CRC.
    const uint64_t summary_end = summary_offset_start != 0 ? summary_offset_start : footer_at;
    if (summary_start < kMagic.size() || summary_start > footer_at || summary_end < summary_start ||
        summary_end > footer_at) {
      Problem(footer_at, "footer" + At(footer_at) + " points at a summary outside the file (summary start " +
                             std::to_string(summary_start) + ")");
      return true;
    }
    if (summary_crc != 0) {
      const uint32_t computed = Crc32(b_.data() + summary_start, footer_at + 1 + 8 + 8 + 8 - summary_start);
      if (computed != summary_crc) {
        Problem(summary_start, "summary CRC mismatch (summary" + At(summary_start) + "): stored " +
                                   Hex32(summary_crc) + ", computed " + Hex32(computed) + "; summary ignored");
        return true;
      }
    }

    // Summary records.
    uint64_t pos = summary_start;
    while (pos < summary_end) {
      const uint64_t left = summary_end - pos;
      const uint64_t len = left >= kRecordPrefix ? LoadLe(b_.data() + pos + 1, 8) : 0;
      if (left < kRecordPrefix || len > left - kRecordPrefix) {
        Problem(pos, "truncated summary record" + At(pos));
        return true;
      }
      const uint8_t op = b_[pos];
      const auto content = b_.subspan(pos + kRecordPrefix, len);
      if (op == kSchema) {
        auto s = ParseSchema(content);
        if (!s) Problem(pos, "malformed schema" + At(pos));
        else if (s->id != 0) r_.schemas.try_emplace(s->id, std::move(*s));
      } else if (op == kChannel) {
        auto ch = ParseChannel(content);
        if (!ch) Problem(pos, "malformed channel" + At(pos));
        else r_.channels.try_emplace(ch->id, std::move(*ch));
      } else if (op == kStatistics) {
        Cursor c(content);
        Statistics st;
        st.message_count = c.U64();
        st.schema_count = c.U16();
        st.channel_count = c.U32();
        c.U32();  // attachments
        c.U32();  // metadata
        st.chunk_count = c.U32();
        st.message_start_time_ns = c.U64();
        st.message_end_time_ns = c.U64();
        st.channel_message_counts = c.IdMap();
        if (!c.ok()) Problem(pos, "malformed statistics" + At(pos));
        else r_.statistics = std::move(st);
      } else if (op == kChunkIndex) {
        Cursor c(content);
        ChunkInfo ci;
        ci.message_start_time_ns = c.U64();
        ci.message_end_time_ns = c.U64();
        ci.offset = c.U64();
        ci.length = c.U64();
        c.IdMap();
        c.U64();
        c.Str();
        c.U64();
        c.U64();
        if (!c.ok()) Problem(pos, "malformed chunk index" + At(pos));
        else r_.chunk_indexes.push_back(ci);
      }
      pos += kRecordPrefix + len;
    }
    r_.summary_found = true;
    CrossCheck();
    return true;
  }

  // Compares the summary with what the data scan found (only when the scan itself was clean).
  void CrossCheck() {
    if (!r_.problems.empty()) return;
    if (r_.statistics) {
      const auto& st = *r_.statistics;
      if (st.message_count != message_count_) {
        Problem(0, "statistics count " + std::to_string(st.message_count) + " messages, the data section holds " +
                       std::to_string(message_count_));
      }
      for (const auto& [id, n] : st.channel_message_counts) {
        const uint64_t found = channel_counts_.count(id) ? channel_counts_.at(id) : 0;
        if (found != n) {
          Problem(0, "statistics count " + std::to_string(n) + " messages on channel " + std::to_string(id) +
                         ", the data section holds " + std::to_string(found));
        }
      }
      if (st.chunk_count != r_.chunks.size()) {
        Problem(0, "statistics count " + std::to_string(st.chunk_count) + " chunks, the data section holds " +
                       std::to_string(r_.chunks.size()));
      }
    }
    for (const auto& ci : r_.chunk_indexes) {
      const bool found = std::any_of(r_.chunks.begin(), r_.chunks.end(), [&](const ChunkInfo& c) {
        return c.offset == ci.offset && c.length == ci.length;
      });
      if (!found) Problem(ci.offset, "chunk index points" + At(ci.offset) + ", where no chunk of that length starts");
    }
  }

  std::span<const uint8_t> b_;
  const MessageFn& on_message_;
  ReadResult& r_;
  uint64_t message_count_ = 0;
  std::map<uint16_t, uint64_t> channel_counts_;
  // Offsets (in the last chunk's records) of its messages -> (channel, log time), for index checks.
  std::unordered_map<uint64_t, std::pair<uint16_t, uint64_t>> last_chunk_messages_;
  bool last_chunk_good_ = false;
  bool data_end_ = false;  // the scan reached DataEnd
};

}  // namespace

ReadResult ReadBytes(std::span<const uint8_t> bytes, const MessageFn& on_message) {
  ReadResult r;
  Scan(bytes, on_message, r).Run();
  return r;
}

namespace {
// Reads `path` whole into `bytes`; false (with the problem in `r`) when it cannot be opened.
bool LoadFile(const std::string& path, std::vector<uint8_t>& bytes, ReadResult& r) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    r.problems.push_back({0, path + ": cannot open: " + std::strerror(errno)});
    return false;
  }
  // In blocks: byte by byte through istreambuf_iterator was most of the time of reading a log.
  bytes.clear();
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) bytes.insert(bytes.end(), block, block + in.gcount());
  return true;
}
void NameProblems(const std::string& path, ReadResult& r) {
  for (auto& p : r.problems) p.message = path + ": " + p.message;
}
}  // namespace

ReadResult Read(const std::string& path, const MessageFn& on_message) {
  ReadResult r;
  std::vector<uint8_t> bytes;
  if (!LoadFile(path, bytes, r)) return r;
  r = ReadBytes(bytes, on_message);
  NameProblems(path, r);
  return r;
}

ReadResult Read(const std::string& path, const ChannelMessageFn& on_message) {
  ReadResult r;
  std::vector<uint8_t> bytes;
  if (!LoadFile(path, bytes, r)) return r;
  // Every channel record precedes its messages, so the scan's channel table already holds it.
  const MessageFn adapter = [&](const Message& m) {
    if (auto it = r.channels.find(m.channel_id); it != r.channels.end()) on_message(it->second, m);
  };
  Scan(bytes, adapter, r).Run();
  NameProblems(path, r);
  return r;
}

ReadResult Read(const std::string& path) { return Read(path, MessageFn()); }

}  // namespace platoon::mcap
