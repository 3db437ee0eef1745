// Reads an MCAP file with @mcap/core, an independent implementation of the specification, and
// prints {"channels":{topic:count,...},"messages":N}.
//   node count.mjs FILE            reads with McapIndexedReader (footer, summary, chunk indexes,
//                                  CRCs) AND McapStreamReader (record by record, chunk CRCs); fails
//                                  unless both agree, the stream reached the footer, and the
//                                  summary's Statistics match what was read.
//   node count.mjs FILE --partial  a file cut by a crash: the streaming reader only, counting every
//                                  message until the data runs out; prints {"channels":{...},"messages":N}.
//   ... --window FROM UNTIL        also prints, from the streaming read, "window": per topic the messages
//                                  whose publish time (ns) lies in [FROM, UNTIL], "last_publish_ns": per
//                                  topic the newest publish time, and "sequence_gaps": per topic the
//                                  places where a channel's sequence number did not go up by one.
import { open, readFile } from "node:fs/promises";
import { McapIndexedReader, McapStreamReader } from "@mcap/core";
import { decompress as zstdDecompress } from "fzstd";
import lz4 from "lz4js";

// Chunk decompression for both readers, from independent npm packages (pinned in package-lock.json):
// fzstd (a Zstandard decoder) and lz4js (LZ4 frames). Each must give exactly the size the chunk names.
const decompressHandlers = {
  zstd: (buffer, decompressedSize) => exact("zstd", zstdDecompress(buffer), decompressedSize),
  lz4: (buffer, decompressedSize) => exact("lz4", Uint8Array.from(lz4.decompress(buffer, Number(decompressedSize))), decompressedSize),
};
function exact(name, bytes, size) {
  if (BigInt(bytes.length) !== BigInt(size)) throw new Error(`${name}: decompressed ${bytes.length} bytes, the chunk says ${size}`);
  return bytes;
}

function sorted(counts) {
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

async function readIndexed(path) {
  const file = await open(path, "r");
  try {
    const readable = {
      size: async () => BigInt((await file.stat()).size),
      read: async (offset, size) => {
        const buffer = new Uint8Array(Number(size));
        let done = 0;
        while (done < buffer.length) {
          const { bytesRead } = await file.read(buffer, done, buffer.length - done, Number(offset) + done);
          if (bytesRead === 0) throw new Error(`short read at ${Number(offset) + done}`);
          done += bytesRead;
        }
        return buffer;
      },
    };
    const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers });
    const counts = {};
    let messages = 0;
    for await (const message of reader.readMessages({ validateCrcs: true })) {
      const topic = reader.channelsById.get(message.channelId).topic;
      counts[topic] = (counts[topic] ?? 0) + 1;
      messages += 1;
    }
    // The summary's Statistics must say the same.
    const stats = reader.statistics;
    if (!stats) throw new Error("indexed reader: no Statistics record in the summary");
    if (stats.messageCount !== BigInt(messages)) {
      throw new Error(`indexed reader: Statistics says ${stats.messageCount} messages, read ${messages}`);
    }
    for (const [id, n] of stats.channelMessageCounts) {
      const topic = reader.channelsById.get(id).topic;
      if (BigInt(counts[topic] ?? 0) !== n) {
        throw new Error(`indexed reader: Statistics says ${n} on ${topic}, read ${counts[topic] ?? 0}`);
      }
    }
    return { channels: sorted(counts), messages };
  } finally {
    await file.close();
  }
}

function readStream(bytes, partial, window) {
  const reader = new McapStreamReader({ validateCrcs: true, decompressHandlers });
  reader.append(bytes);
  const topics = new Map();
  const counts = {};
  const inWindow = {};
  const lastPublish = {};
  const sequenceGaps = {};
  const lastSequence = new Map();
  let messages = 0;
  for (let record; (record = reader.nextRecord()); ) {
    if (record.type === "Channel") topics.set(record.id, record.topic);
    if (record.type === "Message") {
      const topic = topics.get(record.channelId);
      if (topic === undefined) throw new Error(`stream reader: message on unknown channel ${record.channelId}`);
      counts[topic] = (counts[topic] ?? 0) + 1;
      messages += 1;
      if (window) {
        if (record.publishTime >= window.from && record.publishTime <= window.until) inWindow[topic] = (inWindow[topic] ?? 0) + 1;
        if (lastPublish[topic] === undefined || record.publishTime > lastPublish[topic]) lastPublish[topic] = record.publishTime;
        const previous = lastSequence.get(record.channelId);
        if (previous !== undefined && record.sequence !== previous + 1) sequenceGaps[topic] = (sequenceGaps[topic] ?? 0) + 1;
        lastSequence.set(record.channelId, record.sequence);
      }
    }
  }
  if (!partial && !reader.done()) throw new Error("stream reader: the file ended before its footer");
  const result = { channels: sorted(counts), messages };
  if (window) {
    result.window = sorted(inWindow);
    result.last_publish_ns = Object.fromEntries(Object.entries(sorted(lastPublish)).map(([k, v]) => [k, v.toString()]));
    result.sequence_gaps = sorted(sequenceGaps);
  }
  return result;
}

const args = process.argv.slice(2);
const path = args[0];
const partial = args.includes("--partial");
let window;
if (args.includes("--window")) {
  const at = args.indexOf("--window");
  window = { from: BigInt(args[at + 1]), until: BigInt(args[at + 2]) };
}
if (!path || path.startsWith("--")) {
  console.error("usage: node count.mjs FILE [--partial] [--window FROM_NS UNTIL_NS]");
  process.exit(2);
}
try {
  const bytes = new Uint8Array(await readFile(path));
  if (partial) {
    console.log(JSON.stringify(readStream(bytes, true, window)));
  } else {
    const indexed = await readIndexed(path);
    const streamed = readStream(bytes, false, window);
    const { window: w, last_publish_ns: l, sequence_gaps: g, ...streamedCounts } = streamed;
    if (JSON.stringify(indexed) !== JSON.stringify(streamedCounts)) {
      throw new Error(`readers disagree: indexed ${JSON.stringify(indexed)}, stream ${JSON.stringify(streamedCounts)}`);
    }
    console.log(JSON.stringify(window ? { ...indexed, window: w, last_publish_ns: l, sequence_gaps: g } : indexed));
  }
} catch (error) {
  console.error(`count.mjs: ${path}: ${error.message}`);
  process.exit(1);
}
