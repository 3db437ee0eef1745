#pragma once
/// MCAP container (mcap.dev, major version 0): a writer and a reader written from the specification.
///
/// The writer buffers messages into Chunk records (uncompressed, or compressed with zstd or lz4 as the
/// specification allows), each followed by its MessageIndex
/// records, and closes a chunk when it reaches a size or spans a stretch of log time, so that a
/// process killed mid-recording loses at most that stretch. Close() adds DataEnd (data section CRC),
/// the summary section (Schema, Channel, Statistics, ChunkIndex), SummaryOffset records and the
/// Footer. The reader returns every message of every intact chunk, of a closed file or of a file cut
/// by a crash, and names each problem by byte offset. CRC32 is platoon's own table-driven one (the
/// zlib polynomial); there is no zlib dependency.
///
/// Reading never holds a whole file: Read(path) scans it record by record through a FileSource, and
/// StreamReader reads the summary (or, without one, the chunk headers) and then one chunk at a time,
/// in log-time order, from any time on, for the channels asked for. Memory is bounded by the largest
/// chunk, not by the file.
///
/// Neither class is thread-safe: one writer per file, driven from one thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::mcap {

/// CRC32 (zlib polynomial 0xEDB88320, reflected) of `data`, continuing from `crc` (0 to start).
uint32_t Crc32(const void* data, size_t size, uint32_t crc = 0);

// ---------------------------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------------------------

/// A Schema record: how a channel's message bytes are laid out.
struct Schema {
  uint16_t id = 0;                ///< Unique within a file; never 0.
  std::string name;               ///< e.g. "platoon.EntityUpdate" or "foxglove.SceneUpdate".
  std::string encoding;           ///< e.g. "capnp" (custom: "x-capnp"), "jsonschema"; "" = none.
  std::vector<uint8_t> data;      ///< The schema text or binary; empty when encoding is "".
  bool operator==(const Schema&) const = default;
};

/// A Channel record: one stream of messages on a topic.
struct Channel {
  uint16_t id = 0;                               ///< Unique within a file.
  uint16_t schema_id = 0;                        ///< 0 = no schema.
  std::string topic;                             ///< e.g. "/world/entities".
  std::string message_encoding;                  ///< e.g. "json", "x-capnp".
  std::map<std::string, std::string> metadata;   ///< Free key/value pairs.
  bool operator==(const Channel&) const = default;
};

/// Everything about a message except its bytes.
struct MessageHeader {
  uint16_t channel_id = 0;      ///< A channel added before the message.
  uint32_t sequence = 0;        ///< Publisher's counter (or the recorder's).
  uint64_t log_time_ns = 0;     ///< When it was recorded, ns since the session's epoch.
  uint64_t publish_time_ns = 0; ///< When it was published; the log time if unknown.
};

/// A message as the reader returns it.
struct Message {
  uint16_t channel_id = 0;
  uint32_t sequence = 0;
  uint64_t log_time_ns = 0;
  uint64_t publish_time_ns = 0;
  std::vector<uint8_t> data;
  bool operator==(const Message&) const = default;
};

/// The Statistics record (also what the writer reports while it runs).
struct Statistics {
  uint64_t message_count = 0;
  uint16_t schema_count = 0;
  uint32_t channel_count = 0;
  uint32_t chunk_count = 0;
  uint64_t message_start_time_ns = 0;                  ///< Earliest log time; 0 without messages.
  uint64_t message_end_time_ns = 0;                    ///< Latest log time; 0 without messages.
  std::map<uint16_t, uint64_t> channel_message_counts; ///< Channel id -> messages written.
};

/// Where one chunk lies in the file (the ChunkIndex record, or what the reader found).
struct ChunkInfo {
  uint64_t offset = 0;               ///< Byte offset of the Chunk record's opcode.
  uint64_t length = 0;               ///< Whole record, opcode and length prefix included.
  uint64_t message_start_time_ns = 0;
  uint64_t message_end_time_ns = 0;
  uint64_t message_count = 0;        ///< Reader only: messages it held (ChunkIndex has no count).
  std::string compression;           ///< "" (none), "zstd" or "lz4".
  uint64_t records_size = 0;         ///< Bytes of the records uncompressed.
  std::vector<uint16_t> channels;    ///< Channels in the chunk (summary only; empty = not known).
};

/// Chunk compressions this build reads and writes: "" (none), "zstd", "lz4".
bool CompressionSupported(std::string_view compression);

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

/// A byte sink; the seam through which tests make writes fail (a full disk).
class Sink {
 public:
  virtual ~Sink() = default;
  /// Appends `size` bytes; false on any failure (then Error() says why).
  virtual bool Write(const void* data, size_t size) = 0;
  /// Hands buffered bytes to the OS (no fsync); false on failure.
  virtual bool Flush() = 0;
  /// What is written to, for error messages: the path of a file.
  virtual std::string Name() const = 0;
  /// Why the last Write or Flush failed, e.g. "No space left on device".
  virtual std::string Error() const = 0;
};

/// A file written with POSIX write(2): every accepted byte is in the kernel at once, so a killed
/// process loses nothing it wrote (a power cut may: there is no fsync).
class FileSink final : public Sink {
 public:
  /// Creates or truncates `path`; nullptr with `error` set ("log.mcap: Permission denied") on failure.
  static std::unique_ptr<FileSink> Open(const std::string& path, std::string* error);
  ~FileSink() override;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  bool Write(const void* data, size_t size) override;
  bool Flush() override;
  std::string Name() const override { return path_; }
  std::string Error() const override { return error_; }

 private:
  FileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
  std::string error_;
};

/// A sink in memory (tests, and small logs built before they are sent).
class MemorySink final : public Sink {
 public:
  bool Write(const void* data, size_t size) override;
  bool Flush() override { return true; }
  std::string Name() const override { return "memory"; }
  std::string Error() const override { return {}; }
  /// Every byte written so far.
  const std::vector<uint8_t>& Bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

/// How the writer lays out a file.
struct WriterDef {
  std::string profile = "x-platoon";        ///< Header profile; custom profiles start with "x-".
  std::string library = "platoon-mcap";     ///< Header library string.
  uint64_t chunk_size_bytes = 1u << 20;     ///< A chunk closes once its records reach this. Typical 1 MiB.
  uint64_t chunk_span_ns = 100'000'000;     ///< A chunk closes once its log times span this. Typical 100 ms.
  std::string compression;                  ///< Chunk compression: "" (none), "zstd" or "lz4".
  int compression_level = 1;                ///< zstd level (1 fastest .. 19); lz4 ignores it.
};

/// The default layout: 1 MiB / 100 ms chunks, profile "x-platoon".
WriterDef DefaultWriterDef();

/// Result of a writer call: an empty `error` is success.
struct [[nodiscard]] Status {
  std::string error;
  bool Ok() const { return error.empty(); }
};

/// Writes one MCAP file through a Sink. After a failed write it stops: every later call returns
/// the first error and writes nothing. It never throws for I/O.
class Writer {
 public:
  /// The sink must outlive the writer. Nothing is written until the first call.
  explicit Writer(Sink& sink, WriterDef def = DefaultWriterDef());
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Adds a schema (written to the data section at once). Re-adding an identical one is a no-op.
  Status AddSchema(const Schema& schema);
  /// Adds a channel; its schema must have been added (or be 0).
  Status AddChannel(const Channel& channel);
  /// Appends a message to the open chunk; closes the chunk when it is full or spans chunk_span_ns.
  Status WriteMessage(const MessageHeader& header, std::span<const uint8_t> data);
  /// Closes the open chunk (if any) and flushes the sink: everything written so far is readable.
  Status Flush();
  /// Writes the last chunk, DataEnd, the summary, the summary offsets, the footer and the magic.
  Status Close();

  /// Counts so far (messages in the open chunk included).
  const Statistics& Stats() const { return stats_; }
  /// The first error, or "" while healthy.
  const std::string& Error() const { return error_; }
  /// Bytes the sink has accepted.
  uint64_t BytesWritten() const { return position_; }

 private:
  Status Start();
  Status Emit(const void* data, size_t size);
  Status EmitRecord(uint8_t opcode, const std::vector<uint8_t>& content);
  Status CloseChunk();
  Status Fail(const std::string& what);

  Sink& sink_;
  WriterDef def_;
  bool started_ = false;
  bool closed_ = false;
  std::string error_;
  uint64_t position_ = 0;   // bytes accepted by the sink
  bool in_summary_ = false; // DataEnd written: bytes now count towards the summary CRC
  uint32_t data_crc_ = 0;   // running CRC of every byte before DataEnd, magic included
  uint32_t summary_crc_ = 0;// running CRC from the summary's first byte

  std::map<uint16_t, Schema> schemas_;
  std::map<uint16_t, Channel> channels_;
  Statistics stats_;
  // What the summary's ChunkIndex records need about each written chunk.
  struct WrittenChunk {
    ChunkInfo info;
    std::map<uint16_t, uint64_t> message_index_offsets;  // channel id -> file offset
    uint64_t message_index_length = 0;
    uint64_t records_size = 0;
    uint64_t compressed_size = 0;
  };
  std::vector<WrittenChunk> written_chunks_;

  // The open chunk: its records, time range and per-channel (log time, offset) index.
  std::vector<uint8_t> chunk_;
  std::vector<uint8_t> compressed_;  // the open chunk compressed, reused between chunks
  void* zstd_ctx_ = nullptr;         // ZSTD_CCtx, made on the first zstd chunk
  uint64_t chunk_start_ns_ = 0;
  uint64_t chunk_end_ns_ = 0;
  uint64_t chunk_messages_ = 0;
  std::map<uint16_t, std::vector<std::pair<uint64_t, uint64_t>>> chunk_index_;
};

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

/// Something wrong in a file, at a byte offset.
struct Problem {
  uint64_t offset = 0;   ///< Byte offset in the file where the problem starts.
  std::string message;   ///< e.g. "truncated Chunk record at byte 40123: needs 81234 bytes, 17 left".
};

/// What a read found. Messages come in file order.
struct ReadResult {
  bool complete = false;              ///< Footer, summary and every record intact; nothing missing.
  bool summary_found = false;         ///< Footer and summary read and their CRC matched.
  std::string profile;                ///< From the Header.
  std::string library;                ///< From the Header.
  std::map<uint16_t, Schema> schemas;
  std::map<uint16_t, Channel> channels;
  std::vector<Message> messages;      ///< Empty when read with a message callback.
  std::vector<ChunkInfo> chunks;      ///< Every intact chunk the data scan met.
  std::optional<Statistics> statistics;     ///< From the summary.
  std::vector<ChunkInfo> chunk_indexes;     ///< From the summary (message_count 0).
  uint64_t stopped_at = 0;            ///< Byte where the data scan ended (DataEnd, cut or garbage).
  std::vector<Problem> problems;      ///< Empty for a complete file.

  /// All problems, one per line ("" when none).
  std::string ProblemText() const;
};

/// Random-access bytes the readers read from: a file (pread) or memory.
class Source {
 public:
  virtual ~Source() = default;
  /// Bytes in the source.
  virtual uint64_t Size() const = 0;
  /// Bytes [offset, offset + size), valid until the next Read; an empty span (and Error()) on failure.
  /// The caller keeps offset + size <= Size().
  virtual std::span<const uint8_t> Read(uint64_t offset, uint64_t size) = 0;
  /// Why the last Read failed ("" when none).
  virtual std::string Error() const = 0;
};

/// A file read with pread(2) into one reused buffer: memory is the largest single read, not the file.
class FileSource final : public Source {
 public:
  /// Opens `path` for reading; nullptr with `error` set ("log.mcap: cannot open: No such file") on failure.
  static std::unique_ptr<FileSource> Open(const std::string& path, std::string* error);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  uint64_t Size() const override { return size_; }
  std::span<const uint8_t> Read(uint64_t offset, uint64_t size) override;
  std::string Error() const override { return error_; }

 private:
  FileSource(int fd, uint64_t size) : fd_(fd), size_(size) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  std::vector<uint8_t> buffer_;
  std::string error_;
};

/// Bytes in memory (tests, fuzzing); they must outlive the source.
class MemorySource final : public Source {
 public:
  explicit MemorySource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t Size() const override { return bytes_.size(); }
  std::span<const uint8_t> Read(uint64_t offset, uint64_t size) override { return bytes_.subspan(offset, size); }
  std::string Error() const override { return {}; }

 private:
  std::span<const uint8_t> bytes_;
};

/// Called for each message as the data section is scanned.
using MessageFn = std::function<void(const Message&)>;

/// Called for each message with its channel (messages on a channel without a record are not handed).
using ChannelMessageFn = std::function<void(const Channel&, const Message&)>;

/// Reads a whole file (see ReadBytes). A file that cannot be opened gives one problem naming it.
ReadResult Read(const std::string& path);
/// As Read, but hands each message to `on_message` instead of keeping it.
ReadResult Read(const std::string& path, const MessageFn& on_message);
/// As Read, but hands each message with its channel to `on_message` instead of keeping it.
ReadResult Read(const std::string& path, const ChannelMessageFn& on_message);

/// Reads an MCAP image. The data section is scanned record by record: every message of every
/// intact chunk (CRC checked) is returned; a cut stops the scan with a "truncated" problem; a chunk
/// whose CRC fails is reported by offset and skipped. If the footer is intact the summary is read,
/// its CRC checked and its Statistics and ChunkIndex records compared with what the scan found.
/// Every length is bounds-checked: garbage gives problems, never a crash.
ReadResult ReadBytes(std::span<const uint8_t> bytes, const MessageFn& on_message = nullptr);
/// As ReadBytes, from any source: the full check of Read, streaming (memory: the largest record).
ReadResult ReadSource(Source& source, const MessageFn& on_message = nullptr);

/// Reads a log chunk by chunk, in log-time order, from any time on, for chosen topics. It reads the
/// summary (ChunkIndex, Statistics, Schema, Channel records); a file without one (cut by a crash, or
/// written without) is indexed by one pass over the record headers, which reads no message bytes.
/// Only the chunks a read needs are read, one at a time (several only while their times overlap);
/// with a summary, chunks holding none of the chosen channels are never read. Damaged chunks are
/// reported in Problems() and skipped. Not thread-safe.
class StreamReader {
 public:
  /// Opens `path`; nullptr with `error` set when it cannot be opened or is no MCAP file.
  static std::unique_ptr<StreamReader> Open(const std::string& path, std::string* error);
  /// Reads from `source` (it must outlive the reader); nullptr with `error` set when it is no MCAP file.
  static std::unique_ptr<StreamReader> Open(std::unique_ptr<Source> source, std::string* error);
  ~StreamReader();

  /// True when the footer's summary was read (CRC checked); false: indexed by a forward scan.
  bool HasSummary() const;
  /// Schemas known so far (all of them with a summary; else those met so far).
  const std::map<uint16_t, Schema>& Schemas() const;
  /// Channels known so far (all of them with a summary; else those met so far).
  const std::map<uint16_t, Channel>& Channels() const;
  /// The summary's Statistics, when it has them.
  const std::optional<Statistics>& Stats() const;
  /// Every chunk, ordered by start time then file offset.
  const std::vector<ChunkInfo>& Chunks() const;
  /// Everything found wrong so far (file offset and text, the path named).
  const std::vector<Problem>& Problems() const;
  /// Earliest and latest log time of the log's messages, in ns (from the chunks; 0, 0 when empty).
  std::pair<uint64_t, uint64_t> TimeRange() const;

  /// Reads only these topics from now on (empty: every topic); rewinds to the last Seek time.
  void SetTopics(std::vector<std::string> topics);
  /// The next message Next returns is the first (in log time, then file order) at or after `log_time_ns`.
  void Seek(uint64_t log_time_ns);
  /// The next message in log-time order (equal times: file order); false at the end.
  bool Next(Message& out);
  /// The channel of a message Next returned.
  const Channel* ChannelOf(uint16_t channel_id) const;
  /// Bytes of the file read so far (index, summary and chunks): progress for long reads.
  uint64_t BytesRead() const;
  /// Size of the file in bytes.
  uint64_t FileSize() const;

  struct Impl;

 private:
  explicit StreamReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::mcap
