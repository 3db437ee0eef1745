#include "platoon/log/mcap.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <unordered_map>

#include <fcntl.h>
#include <lz4frame.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

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

// Slicing-by-8 tables: table k advances a byte through k further zero bytes (8 bytes a step).
constexpr std::array<std::array<uint32_t, 256>, 8> MakeCrcSlices() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  t[0] = MakeCrcTable();
  for (int k = 1; k < 8; ++k)
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFFu];
  return t;
}
constexpr std::array<std::array<uint32_t, 256>, 8> kCrcSlices = MakeCrcSlices();

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

std::optional<Statistics> ParseStatistics(std::span<const uint8_t> content) {
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
  if (!c.ok()) return std::nullopt;
  return st;
}

std::optional<ChunkInfo> ParseChunkIndex(std::span<const uint8_t> content) {
  Cursor c(content);
  ChunkInfo ci;
  ci.message_start_time_ns = c.U64();
  ci.message_end_time_ns = c.U64();
  ci.offset = c.U64();
  ci.length = c.U64();
  for (const auto& [channel, offset] : c.IdMap()) ci.channels.push_back(channel);
  c.U64();  // message index length
  ci.compression = c.Str();
  c.U64();  // compressed size
  ci.records_size = c.U64();
  if (!c.ok()) return std::nullopt;
  return ci;
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

// A chunk may claim any uncompressed size; more than this is refused rather than allocated.
constexpr uint64_t kMaxChunkRecords = uint64_t{1} << 30;

// Decompresses a chunk's records into `out` (resized to `size`); "" on success, else why not.
std::string Decompress(const std::string& compression, std::span<const uint8_t> in, uint64_t size,
                       std::vector<uint8_t>& out) {
  if (size > kMaxChunkRecords) {
    return "it claims " + std::to_string(size) + " uncompressed bytes, more than the reader's limit of " +
           std::to_string(kMaxChunkRecords);
  }
  // A size the compressed bytes cannot hold is refused before it is allocated: an LZ4 sequence expands
  // at most 255-fold; a zstd frame names its content size (when its writer knew it).
  if (compression == "lz4" && size > in.size() * 255 + 65536) {
    return "it claims " + std::to_string(size) + " uncompressed bytes, more than " + std::to_string(in.size()) +
           " lz4 bytes can hold";
  }
  if (compression == "zstd") {
    const unsigned long long named = ZSTD_getFrameContentSize(in.data(), in.size());
    if (named == ZSTD_CONTENTSIZE_ERROR) return "zstd: the records are no zstd frame";
    if (named != ZSTD_CONTENTSIZE_UNKNOWN && named != size)
      return "the zstd frame holds " + std::to_string(named) + " bytes, the chunk says " + std::to_string(size);
  }
  out.resize(size);
  if (compression == "zstd") {
    const size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(n)) return std::string("zstd: ") + ZSTD_getErrorName(n);
    if (n != size) return "zstd gave " + std::to_string(n) + " bytes, the chunk says " + std::to_string(size);
    return {};
  }
  if (compression == "lz4") {
    LZ4F_dctx* ctx = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) return "lz4: cannot make a context";
    size_t in_pos = 0, out_pos = 0;
    std::string error;
    while (in_pos < in.size()) {
      size_t src = in.size() - in_pos, dst = out.size() - out_pos;
      const size_t hint = LZ4F_decompress(ctx, out.data() + out_pos, &dst, in.data() + in_pos, &src, nullptr);
      if (LZ4F_isError(hint)) {
        error = std::string("lz4: ") + LZ4F_getErrorName(hint);
        break;
      }
      in_pos += src;
      out_pos += dst;
      if (hint == 0) break;  // frame complete
      if (src == 0 && dst == 0) {
        error = "lz4: the frame needs more bytes than the chunk holds";
        break;
      }
    }
    LZ4F_freeDecompressionContext(ctx);
    if (!error.empty()) return error;
    if (out_pos != size) return "lz4 gave " + std::to_string(out_pos) + " bytes, the chunk says " + std::to_string(size);
    return {};
  }
  return "compression '" + compression + "' is not one this reader reads (zstd, lz4 or none)";
}

}  // namespace

bool CompressionSupported(std::string_view compression) {
  return compression.empty() || compression == "zstd" || compression == "lz4";
}

uint32_t Crc32(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  // Eight bytes a step (logs are read at hundreds of MB/s), then the tail byte by byte.
  while (size >= 8) {
    const uint32_t lo = c ^ static_cast<uint32_t>(LoadLe(p, 4));
    const uint32_t hi = static_cast<uint32_t>(LoadLe(p + 4, 4));
    c = kCrcSlices[7][lo & 0xFFu] ^ kCrcSlices[6][(lo >> 8) & 0xFFu] ^ kCrcSlices[5][(lo >> 16) & 0xFFu] ^
        kCrcSlices[4][lo >> 24] ^ kCrcSlices[3][hi & 0xFFu] ^ kCrcSlices[2][(hi >> 8) & 0xFFu] ^
        kCrcSlices[1][(hi >> 16) & 0xFFu] ^ kCrcSlices[0][hi >> 24];
    p += 8;
    size -= 8;
  }
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

Writer::~Writer() {
  if (zstd_ctx_) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_ctx_));
}

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

  // The records as stored: compressed when asked (the CRC is of the uncompressed records).
  std::span<const uint8_t> stored(chunk_.data(), chunk_.size());
  if (def_.compression == "zstd") {
    if (!zstd_ctx_) zstd_ctx_ = ZSTD_createCCtx();
    compressed_.resize(ZSTD_compressBound(chunk_.size()));
    const size_t n = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(zstd_ctx_), compressed_.data(), compressed_.size(),
                                       chunk_.data(), chunk_.size(), def_.compression_level);
    if (ZSTD_isError(n)) return Fail(std::string("mcap: zstd compression failed: ") + ZSTD_getErrorName(n));
    stored = std::span<const uint8_t>(compressed_.data(), n);
  } else if (def_.compression == "lz4") {
    LZ4F_preferences_t prefs{};
    prefs.frameInfo.contentSize = chunk_.size();
    compressed_.resize(LZ4F_compressFrameBound(chunk_.size(), &prefs));
    const size_t n = LZ4F_compressFrame(compressed_.data(), compressed_.size(), chunk_.data(), chunk_.size(), &prefs);
    if (LZ4F_isError(n)) return Fail(std::string("mcap: lz4 compression failed: ") + LZ4F_getErrorName(n));
    stored = std::span<const uint8_t>(compressed_.data(), n);
  } else if (!def_.compression.empty()) {
    return Fail("mcap: chunk compression '" + def_.compression + "' is not one of zstd, lz4 or none");
  }
  written.compressed_size = stored.size();

  // Chunk record: fixed fields, the compression string, then the records (written without a copy).
  std::vector<uint8_t> prefix;
  Out o(prefix);
  const uint64_t content_size = 8 + 8 + 8 + 4 + 4 + def_.compression.size() + 8 + stored.size();
  o.U8(kChunk);
  o.U64(content_size);
  o.U64(chunk_start_ns_);
  o.U64(chunk_end_ns_);
  o.U64(chunk_.size());
  o.U32(Crc32(chunk_.data(), chunk_.size()));
  o.Str(def_.compression);
  o.U64(stored.size());
  if (auto s = Emit(prefix.data(), prefix.size()); !s.Ok()) return s;
  if (auto s = Emit(stored.data(), stored.size()); !s.Ok()) return s;
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
    o.Str(def_.compression);
    o.U64(w.compressed_size);
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
// Bytes come from a Source, record by record: memory is the largest record, not the file.
class Scan {
 public:
  Scan(Source& source, const MessageFn& on_message, ReadResult& r)
      : src_(source), size_(source.Size()), on_message_(on_message), r_(r) {}

  void Run() {
    if (!ReadMagic()) return;
    data_end_ = ScanData();
    const bool footer = ReadFooter();
    r_.complete = data_end_ && footer && r_.problems.empty();
  }

 private:
  void Problem(uint64_t offset, std::string message) { r_.problems.push_back({offset, std::move(message)}); }

  // Bytes [offset, offset + n); the data-section CRC runs over every byte read in order from 0. A failed
  // read is a problem and sets io_failed_ (the caller stops).
  std::span<const uint8_t> Get(uint64_t offset, uint64_t n) {
    if (n == 0) return {};
    auto s = src_.Read(offset, n);
    if (s.size() != n) {
      io_failed_ = true;
      Problem(offset, "reading " + std::to_string(n) + " bytes" + At(offset) + " failed: " + src_.Error());
      return {};
    }
    if (crc_on_ && offset == crc_end_) {
      data_crc_ = Crc32(s.data(), n, data_crc_);
      crc_end_ += n;
    }
    return s;
  }

  // Reads a record's content that is not parsed, in pieces, only for the data-section CRC.
  void Skip(uint64_t offset, uint64_t n) {
    constexpr uint64_t kPiece = 1 << 20;
    for (uint64_t done = 0; done < n && !io_failed_;) {
      const uint64_t piece = std::min(kPiece, n - done);
      Get(offset + done, piece);
      done += piece;
    }
  }

  bool ReadMagic() {
    if (size_ == 0) {
      Problem(0, "empty file: not an MCAP file");
      return false;
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size_, kMagic.size()));
    const auto head = Get(0, n);
    if (io_failed_) return false;
    if (!std::equal(head.begin(), head.end(), kMagic.begin())) {
      Problem(0, "not an MCAP file: the first bytes are not the MCAP magic \\x89MCAP0\\r\\n");
      return false;
    }
    if (size_ < kMagic.size()) {
      Problem(size_, "truncated magic: the file ends after " + std::to_string(size_) + " bytes");
      r_.stopped_at = size_;
      return false;
    }
    return true;
  }

  // Scans records from just after the magic to DataEnd; true when DataEnd was reached.
  bool ScanData() {
    uint64_t pos = kMagic.size();
    bool first = true;
    for (;;) {
      const uint64_t left = size_ - pos;
      if (left == 0) {
        Problem(pos, "file ends" + At(pos) + " after a complete record, with no data end and no footer "
                     "(the writer did not close it)");
        break;
      }
      if (left < kRecordPrefix) {
        Problem(pos, "truncated record header" + At(pos) + ": 9 bytes needed, " + std::to_string(left) + " left");
        break;
      }
      // The data CRC before this record: DataEnd's stored CRC covers the bytes before its opcode.
      const uint32_t crc_before = data_crc_;
      const bool crc_known = crc_end_ == pos;
      const auto prefix = Get(pos, kRecordPrefix);
      if (io_failed_) break;
      const uint8_t op = prefix[0];
      const uint64_t len = LoadLe(prefix.data() + 1, 8);
      if (len > left - kRecordPrefix) {
        Problem(pos, "truncated " + OpName(op) + At(pos) + ": the record needs " + std::to_string(len) +
                         " content bytes, the file has " + std::to_string(left - kRecordPrefix) + " more");
        break;
      }
      const uint64_t at = pos;
      // Records platoon parses are read whole; others only pass through the CRC, in pieces.
      const bool parsed = op == kHeader || op == kSchema || op == kChannel || op == kMessage || op == kChunk ||
                          op == kMessageIndex || op == kDataEnd;
      std::span<const uint8_t> content;
      if (parsed) {
        content = Get(pos + kRecordPrefix, len);
      } else if (op == kAttachment || op == kMetadata || op > kDataEnd || op == 0) {
        Skip(pos + kRecordPrefix, len);
      }
      if (io_failed_) break;
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
          } else if (stored != 0 && crc_known) {
            const uint32_t computed = crc_before;
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
    const auto stored_records = c.Take(c.U64());
    if (!c.ok()) return Problem(at, "malformed chunk" + At(at) + ": a field runs past the record's end");
    info.compression = compression;
    info.records_size = uncompressed_size;
    std::span<const uint8_t> records = stored_records;
    if (!compression.empty()) {
      if (const std::string why = Decompress(compression, stored_records, uncompressed_size, chunk_buf_); !why.empty()) {
        return Problem(at, "chunk" + At(at) + " cannot be decompressed: " + why + "; its messages are skipped");
      }
      records = std::span<const uint8_t>(chunk_buf_.data(), chunk_buf_.size());
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
      // Inside a compressed chunk there is no file offset of the record: the chunk's is named.
      const uint64_t file_at = compression.empty() ? at + (info.length - records.size()) + pos : at;
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
    crc_on_ = false;
    if (io_failed_) return false;
    const uint64_t size = size_;
    const uint64_t footer_len = kRecordPrefix + kFooterContent;
    std::span<const uint8_t> tail;
    if (size >= kMagic.size() * 2 + footer_len) tail = Get(size - kMagic.size() - footer_len, footer_len + kMagic.size());
    if (io_failed_) return false;
    if (size < kMagic.size() * 2 + footer_len ||
        !std::equal(kMagic.begin(), kMagic.end(), tail.end() - kMagic.size())) {
      Problem(size, "no footer: the file was not closed (cut by a crash or still being written); the data "
                    "section was read up to byte " + std::to_string(r_.stopped_at));
      return false;
    }
    const uint64_t footer_at = size - kMagic.size() - footer_len;
    if (tail[0] != kFooter || LoadLe(tail.data() + 1, 8) != kFooterContent) {
      Problem(footer_at, "no footer record before the trailing magic (expected" + At(footer_at) + ")");
      return false;
    }
    Cursor f(tail.subspan(kRecordPrefix, kFooterContent));
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
    // The summary, its offsets and the footer up to its CRC field, read at once.
    const auto summary = Get(summary_start, footer_at + 1 + 8 + 8 + 8 - summary_start);
    if (io_failed_) return true;
    if (summary_crc != 0) {
      const uint32_t computed = Crc32(summary.data(), summary.size());
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
      const uint64_t local = pos - summary_start;
      const uint64_t len = left >= kRecordPrefix ? LoadLe(summary.data() + local + 1, 8) : 0;
      if (left < kRecordPrefix || len > left - kRecordPrefix) {
        Problem(pos, "truncated summary record" + At(pos));
        return true;
      }
      const uint8_t op = summary[local];
      const auto content = summary.subspan(local + kRecordPrefix, len);
      if (op == kSchema) {
        auto s = ParseSchema(content);
        if (!s) Problem(pos, "malformed schema" + At(pos));
        else if (s->id != 0) r_.schemas.try_emplace(s->id, std::move(*s));
      } else if (op == kChannel) {
        auto ch = ParseChannel(content);
        if (!ch) Problem(pos, "malformed channel" + At(pos));
        else r_.channels.try_emplace(ch->id, std::move(*ch));
      } else if (op == kStatistics) {
        auto st = ParseStatistics(content);
        if (!st) Problem(pos, "malformed statistics" + At(pos));
        else r_.statistics = std::move(*st);
      } else if (op == kChunkIndex) {
        auto ci = ParseChunkIndex(content);
        if (!ci) Problem(pos, "malformed chunk index" + At(pos));
        else r_.chunk_indexes.push_back(std::move(*ci));
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

  Source& src_;
  const uint64_t size_;
  bool io_failed_ = false;
  bool crc_on_ = true;       // the data section is being read: Get feeds the running CRC
  uint32_t data_crc_ = 0;    // CRC of bytes [0, crc_end_)
  uint64_t crc_end_ = 0;
  std::vector<uint8_t> chunk_buf_;  // a decompressed chunk's records, reused
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

ReadResult ReadSource(Source& source, const MessageFn& on_message) {
  ReadResult r;
  Scan(source, on_message, r).Run();
  return r;
}

ReadResult ReadBytes(std::span<const uint8_t> bytes, const MessageFn& on_message) {
  MemorySource source(bytes);
  return ReadSource(source, on_message);
}

// ---------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------

std::unique_ptr<FileSource> FileSource::Open(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    if (error) *error = path + ": cannot open: " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<FileSource>(new FileSource(fd, static_cast<uint64_t>(st.st_size)));
}

FileSource::~FileSource() {
  if (fd_ >= 0) ::close(fd_);
}

std::span<const uint8_t> FileSource::Read(uint64_t offset, uint64_t size) {
  if (offset > size_ || size > size_ - offset) {
    error_ = "read past the end of the file";
    return {};
  }
  buffer_.resize(size);
  // The buffer keeps its capacity: after the largest chunk no read allocates.
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, buffer_.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n < 0 ? std::strerror(errno) : "the file ended early (truncated while being read?)";
      return {};
    }
    done += static_cast<uint64_t>(n);
  }
  return std::span<const uint8_t>(buffer_.data(), size);
}

namespace {
void NameProblems(const std::string& path, ReadResult& r) {
  for (auto& p : r.problems) p.message = path + ": " + p.message;
}
}  // namespace

ReadResult Read(const std::string& path, const MessageFn& on_message) {
  ReadResult r;
  std::string error;
  auto source = FileSource::Open(path, &error);
  if (!source) {
    r.problems.push_back({0, error});
    return r;
  }
  r = ReadSource(*source, on_message);
  NameProblems(path, r);
  return r;
}

ReadResult Read(const std::string& path, const ChannelMessageFn& on_message) {
  ReadResult r;
  std::string error;
  auto source = FileSource::Open(path, &error);
  if (!source) {
    r.problems.push_back({0, error});
    return r;
  }
  // Every channel record precedes its messages, so the scan's channel table already holds it.
  const MessageFn adapter = [&](const Message& m) {
    if (auto it = r.channels.find(m.channel_id); it != r.channels.end()) on_message(it->second, m);
  };
  Scan(*source, adapter, r).Run();
  NameProblems(path, r);
  return r;
}

ReadResult Read(const std::string& path) { return Read(path, MessageFn()); }

// ---------------------------------------------------------------------------------------------
// StreamReader
// ---------------------------------------------------------------------------------------------

struct StreamReader::Impl {
  std::unique_ptr<Source> src;
  std::string name;  // the path, for problems
  bool has_summary = false;
  std::map<uint16_t, Schema> schemas;
  std::map<uint16_t, Channel> channels;
  std::optional<Statistics> stats;
  std::vector<ChunkInfo> chunks;  // by (start time, offset)
  std::vector<bool> bare;         // parallel to chunks: a Message record outside any chunk
  std::vector<Problem> problems;
  uint64_t bytes_read = 0;

  // Reading state: the topics asked for, the seek time, the next chunk and the messages of the
  // chunks loaded but not yet handed out, as a min-heap by (log time, file position).
  std::vector<std::string> topics;  // sorted; empty = all
  uint64_t seek_ns = 0;
  size_t next_chunk = 0;
  struct Pending {
    uint64_t log_time = 0;
    uint64_t chunk_offset = 0;
    uint64_t position = 0;
    Message message;
  };
  std::vector<Pending> heap;
  std::vector<uint8_t> records_buf;
  std::set<uint64_t> reported;  // chunks whose problem was already reported (a re-read after Seek)

  static bool Later(const Pending& a, const Pending& b) {
    if (a.log_time != b.log_time) return a.log_time > b.log_time;
    if (a.chunk_offset != b.chunk_offset) return a.chunk_offset > b.chunk_offset;
    return a.position > b.position;
  }

  void AddProblem(uint64_t offset, const std::string& text) {
    problems.push_back({offset, (name.empty() ? "" : name + ": ") + text});
  }

  std::span<const uint8_t> Get(uint64_t offset, uint64_t size) {
    auto s = src->Read(offset, size);
    if (s.size() != size) {
      AddProblem(offset, "reading " + std::to_string(size) + " bytes" + At(offset) + " failed: " + src->Error());
      return {};
    }
    bytes_read += size;
    return s;
  }

  bool Wanted(uint16_t channel_id) const {
    if (topics.empty()) return true;
    auto it = channels.find(channel_id);
    return it != channels.end() && std::binary_search(topics.begin(), topics.end(), it->second.topic);
  }

  bool ChunkWanted(const ChunkInfo& c) const {
    if (topics.empty() || c.channels.empty()) return true;
    return std::any_of(c.channels.begin(), c.channels.end(), [&](uint16_t id) { return Wanted(id); });
  }

  // The footer's summary; true when it was read whole (CRC checked).
  bool ReadSummary() {
    const uint64_t size = src->Size();
    const uint64_t footer_len = kRecordPrefix + kFooterContent;
    if (size < kMagic.size() * 2 + footer_len) return false;
    const uint64_t footer_at = size - kMagic.size() - footer_len;
    auto tail = Get(footer_at, footer_len + kMagic.size());
    if (tail.empty() || !std::equal(kMagic.begin(), kMagic.end(), tail.end() - kMagic.size())) return false;
    if (tail[0] != kFooter || LoadLe(tail.data() + 1, 8) != kFooterContent) return false;
    Cursor f(tail.subspan(kRecordPrefix, kFooterContent));
    const uint64_t summary_start = f.U64();
    const uint64_t summary_offset_start = f.U64();
    const uint32_t summary_crc = f.U32();
    if (summary_start == 0) return false;  // closed without a summary: index by scanning
    const uint64_t summary_end = summary_offset_start != 0 ? summary_offset_start : footer_at;
    if (summary_start < kMagic.size() || summary_end < summary_start || summary_end > footer_at) {
      AddProblem(footer_at, "footer" + At(footer_at) + " points at a summary outside the file; read by a forward scan");
      return false;
    }
    const auto summary = Get(summary_start, footer_at + 1 + 8 + 8 + 8 - summary_start);
    if (summary.empty()) return false;
    if (summary_crc != 0 && Crc32(summary.data(), summary.size()) != summary_crc) {
      AddProblem(summary_start, "summary CRC mismatch (summary" + At(summary_start) + "); read by a forward scan");
      return false;
    }
    std::map<uint16_t, Schema> s_schemas;
    std::map<uint16_t, Channel> s_channels;
    std::vector<ChunkInfo> s_chunks;
    std::optional<Statistics> s_stats;
    for (uint64_t local = 0; local < summary_end - summary_start;) {
      const uint64_t left = summary_end - summary_start - local;
      const uint64_t len = left >= kRecordPrefix ? LoadLe(summary.data() + local + 1, 8) : 0;
      if (left < kRecordPrefix || len > left - kRecordPrefix) {
        AddProblem(summary_start + local, "truncated summary record" + At(summary_start + local) + "; read by a forward scan");
        return false;
      }
      const uint8_t op = summary[local];
      const auto content = summary.subspan(local + kRecordPrefix, len);
      bool ok = true;
      if (op == kSchema) {
        auto sc = ParseSchema(content);
        ok = sc.has_value();
        if (ok && sc->id != 0) s_schemas.try_emplace(sc->id, std::move(*sc));
      } else if (op == kChannel) {
        auto ch = ParseChannel(content);
        ok = ch.has_value();
        if (ok) s_channels.try_emplace(ch->id, std::move(*ch));
      } else if (op == kStatistics) {
        auto st = ParseStatistics(content);
        ok = st.has_value();
        if (ok) s_stats = std::move(*st);
      } else if (op == kChunkIndex) {
        auto ci = ParseChunkIndex(content);
        ok = ci && ci->offset >= kMagic.size() && ci->length >= kRecordPrefix && ci->offset <= size &&
             ci->length <= size - ci->offset;
        if (ok) s_chunks.push_back(std::move(*ci));
      }
      if (!ok) {
        AddProblem(summary_start + local, "malformed " + OpName(op) + " in the summary" + At(summary_start + local) +
                                              "; read by a forward scan");
        return false;
      }
      local += kRecordPrefix + len;
    }
    schemas = std::move(s_schemas);
    channels = std::move(s_channels);
    stats = std::move(s_stats);
    chunks = std::move(s_chunks);
    bare.assign(chunks.size(), false);
    return true;
  }

  // Without a summary: one pass over the record headers from the start (chunk contents are not read),
  // until DataEnd, a cut or something that is no data-section record.
  void IndexByScan() {
    const uint64_t size = src->Size();
    uint64_t pos = kMagic.size();
    for (;;) {
      const uint64_t left = size - pos;
      if (left == 0) {
        AddProblem(pos, "the file ends" + At(pos) + " with no data end and no summary (not closed): every complete "
                        "chunk before it is read");
        return;
      }
      if (left < kRecordPrefix) {
        AddProblem(pos, "truncated record header" + At(pos) + ": every complete chunk before it is read");
        return;
      }
      const auto prefix = Get(pos, kRecordPrefix);
      if (prefix.empty()) return;
      const uint8_t op = prefix[0];
      const uint64_t len = LoadLe(prefix.data() + 1, 8);
      if (len > left - kRecordPrefix) {
        AddProblem(pos, "truncated " + OpName(op) + At(pos) + " (the file was cut): every complete chunk before it is read");
        return;
      }
      const uint64_t content_at = pos + kRecordPrefix;
      if (op == kSchema || op == kChannel) {
        const auto content = Get(content_at, len);
        if (content.size() != len) return;
        if (op == kSchema) {
          if (auto sc = ParseSchema(content); sc && sc->id != 0) schemas.try_emplace(sc->id, std::move(*sc));
          else if (!sc) AddProblem(pos, "malformed schema" + At(pos));
        } else {
          if (auto ch = ParseChannel(content)) channels.try_emplace(ch->id, std::move(*ch));
          else AddProblem(pos, "malformed channel" + At(pos));
        }
      } else if (op == kChunk) {
        // Start and end time, sizes, CRC and the compression string; the records stay unread.
        constexpr uint64_t kFixed = 8 + 8 + 8 + 4 + 4;
        const auto fixed = len >= kFixed ? Get(content_at, kFixed) : std::span<const uint8_t>{};
        if (fixed.size() != kFixed) {
          AddProblem(pos, "malformed chunk" + At(pos));
        } else {
          ChunkInfo ci;
          ci.offset = pos;
          ci.length = kRecordPrefix + len;
          ci.message_start_time_ns = LoadLe(fixed.data(), 8);
          ci.message_end_time_ns = LoadLe(fixed.data() + 8, 8);
          ci.records_size = LoadLe(fixed.data() + 16, 8);
          const uint64_t compression_len = LoadLe(fixed.data() + 28, 4);
          if (compression_len > len - kFixed) {
            AddProblem(pos, "malformed chunk" + At(pos));
          } else {
            const auto comp = Get(content_at + kFixed, compression_len);
            ci.compression.assign(comp.begin(), comp.end());
            chunks.push_back(std::move(ci));
            bare.push_back(false);
          }
        }
      } else if (op == kMessage) {
        const auto fixed = len >= kMessageFixed ? Get(content_at, kMessageFixed) : std::span<const uint8_t>{};
        if (fixed.size() != kMessageFixed) {
          AddProblem(pos, "malformed message" + At(pos));
        } else {
          ChunkInfo ci;
          ci.offset = pos;
          ci.length = kRecordPrefix + len;
          ci.message_start_time_ns = ci.message_end_time_ns = LoadLe(fixed.data() + 6, 8);
          chunks.push_back(std::move(ci));
          bare.push_back(true);
        }
      } else if (op == kDataEnd) {
        return;
      } else if (op == kFooter || op == kChunkIndex || op == kStatistics || op == kSummaryOffset ||
                 op == kAttachmentIndex || op == kMetadataIndex) {
        return;  // the summary of a file whose footer did not lead to it: the data section ended
      }
      pos = content_at + len;
    }
  }

  // Reads one chunk (or bare message) and queues its wanted messages at or after the seek time.
  void Load(size_t index) {
    const ChunkInfo& info = chunks[index];
    const auto content = Get(info.offset + kRecordPrefix, info.length - kRecordPrefix);
    if (content.size() != info.length - kRecordPrefix) return;
    auto queue = [&](Message&& m, uint64_t position) {
      if (m.log_time_ns < seek_ns || !Wanted(m.channel_id)) return;
      const uint64_t t = m.log_time_ns;
      heap.push_back(Pending{t, info.offset, position, std::move(m)});
      std::push_heap(heap.begin(), heap.end(), Later);
    };
    auto problem = [&](const std::string& text) {
      if (reported.insert(info.offset).second) AddProblem(info.offset, text);
    };
    if (bare[index]) {
      if (auto m = ParseMessage(content)) queue(std::move(*m), 0);
      return;
    }
    Cursor c(content);
    c.U64();
    c.U64();
    const uint64_t uncompressed_size = c.U64();
    const uint32_t stored_crc = c.U32();
    const std::string compression = c.Str();
    const auto stored = c.Take(c.U64());
    if (!c.ok()) return problem("malformed chunk" + At(info.offset) + ": a field runs past the record's end");
    std::span<const uint8_t> records = stored;
    if (!compression.empty()) {
      if (const std::string why = Decompress(compression, stored, uncompressed_size, records_buf); !why.empty())
        return problem("chunk" + At(info.offset) + " cannot be decompressed: " + why + "; its messages are skipped");
      records = std::span<const uint8_t>(records_buf.data(), records_buf.size());
    }
    if (records.size() != uncompressed_size)
      return problem("chunk" + At(info.offset) + ": uncompressed size " + std::to_string(uncompressed_size) +
                     " does not match its " + std::to_string(records.size()) + " record bytes");
    if (stored_crc != 0 && Crc32(records.data(), records.size()) != stored_crc)
      return problem("damaged chunk" + At(info.offset) + ": CRC mismatch; its messages are skipped");
    for (uint64_t pos = 0; pos < records.size();) {
      const uint64_t left = records.size() - pos;
      const uint64_t len = left >= kRecordPrefix ? LoadLe(records.data() + pos + 1, 8) : 0;
      if (left < kRecordPrefix || len > left - kRecordPrefix) {
        problem("chunk" + At(info.offset) + ": truncated record at chunk offset " + std::to_string(pos));
        break;
      }
      const uint8_t op = records[pos];
      const auto inner = records.subspan(pos + kRecordPrefix, len);
      if (op == kSchema) {
        if (auto sc = ParseSchema(inner); sc && sc->id != 0) schemas.try_emplace(sc->id, std::move(*sc));
      } else if (op == kChannel) {
        if (auto ch = ParseChannel(inner)) channels.try_emplace(ch->id, std::move(*ch));
      } else if (op == kMessage && inner.size() >= kMessageFixed) {
        // Only the header first: a message not asked for is never copied.
        const uint16_t channel_id = static_cast<uint16_t>(LoadLe(inner.data(), 2));
        const uint64_t log_time = LoadLe(inner.data() + 6, 8);
        if (log_time >= seek_ns && Wanted(channel_id)) {
          if (auto m = ParseMessage(inner)) queue(std::move(*m), pos);
        }
      }
      pos += kRecordPrefix + len;
    }
  }
};

std::unique_ptr<StreamReader> StreamReader::Open(const std::string& path, std::string* error) {
  auto source = FileSource::Open(path, error);
  if (!source) return nullptr;
  std::string why;
  auto reader = Open(std::move(source), &why);
  if (!reader) {
    if (error) *error = path + ": " + why;
    return nullptr;
  }
  reader->impl_->name = path;
  for (auto& p : reader->impl_->problems) p.message = path + ": " + p.message;
  return reader;
}

std::unique_ptr<StreamReader> StreamReader::Open(std::unique_ptr<Source> source, std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->src = std::move(source);
  const uint64_t size = impl->src->Size();
  const auto head = size >= kMagic.size() ? impl->src->Read(0, kMagic.size()) : std::span<const uint8_t>{};
  if (head.size() != kMagic.size() || !std::equal(kMagic.begin(), kMagic.end(), head.begin())) {
    if (error) *error = size == 0 ? "empty file: not an MCAP file" : "not an MCAP file: the first bytes are not the MCAP magic";
    return nullptr;
  }
  impl->has_summary = impl->ReadSummary();
  if (!impl->has_summary) impl->IndexByScan();
  // Chunk order for the log-time merge: by start time, then file offset (keeping bare messages in step).
  std::vector<size_t> order(impl->chunks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = impl->chunks[a];
    const auto& y = impl->chunks[b];
    if (x.message_start_time_ns != y.message_start_time_ns) return x.message_start_time_ns < y.message_start_time_ns;
    return x.offset < y.offset;
  });
  std::vector<ChunkInfo> chunks;
  std::vector<bool> bare;
  chunks.reserve(order.size());
  for (size_t i : order) {
    chunks.push_back(std::move(impl->chunks[i]));
    bare.push_back(impl->bare[i]);
  }
  impl->chunks = std::move(chunks);
  impl->bare = std::move(bare);
  return std::unique_ptr<StreamReader>(new StreamReader(std::move(impl)));
}

StreamReader::StreamReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamReader::~StreamReader() = default;

bool StreamReader::HasSummary() const { return impl_->has_summary; }
const std::map<uint16_t, Schema>& StreamReader::Schemas() const { return impl_->schemas; }
const std::map<uint16_t, Channel>& StreamReader::Channels() const { return impl_->channels; }
const std::optional<Statistics>& StreamReader::Stats() const { return impl_->stats; }
const std::vector<ChunkInfo>& StreamReader::Chunks() const { return impl_->chunks; }
const std::vector<Problem>& StreamReader::Problems() const { return impl_->problems; }
uint64_t StreamReader::BytesRead() const { return impl_->bytes_read; }
uint64_t StreamReader::FileSize() const { return impl_->src->Size(); }

std::pair<uint64_t, uint64_t> StreamReader::TimeRange() const {
  if (impl_->chunks.empty()) return {0, 0};
  uint64_t first = UINT64_MAX, last = 0;
  for (const auto& c : impl_->chunks) {
    first = std::min(first, c.message_start_time_ns);
    last = std::max(last, c.message_end_time_ns);
  }
  return {first, last};
}

void StreamReader::SetTopics(std::vector<std::string> topics) {
  std::sort(topics.begin(), topics.end());
  impl_->topics = std::move(topics);
  Seek(impl_->seek_ns);
}

void StreamReader::Seek(uint64_t log_time_ns) {
  impl_->seek_ns = log_time_ns;
  impl_->next_chunk = 0;
  impl_->heap.clear();
}

bool StreamReader::Next(Message& out) {
  Impl& d = *impl_;
  // Load every chunk that may hold a message earlier than the earliest queued one.
  while (d.next_chunk < d.chunks.size()) {
    const ChunkInfo& c = d.chunks[d.next_chunk];
    if (!d.heap.empty() && c.message_start_time_ns > d.heap.front().log_time) break;
    const size_t index = d.next_chunk++;
    if (c.message_end_time_ns < d.seek_ns || !d.ChunkWanted(c)) continue;
    d.Load(index);
  }
  if (d.heap.empty()) return false;
  std::pop_heap(d.heap.begin(), d.heap.end(), Impl::Later);
  out = std::move(d.heap.back().message);
  d.heap.pop_back();
  return true;
}

const Channel* StreamReader::ChannelOf(uint16_t channel_id) const {
  auto it = impl_->channels.find(channel_id);
  return it == impl_->channels.end() ? nullptr : &it->second;
}

}  // namespace platoon::mcap
