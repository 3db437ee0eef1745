// Reads an MCAP file with @mcap/core, an independent implementation of the specification, and
// prints {"channels":{topic:count,...},"messages":N}.
//   node count.mjs FILE            reads with McapIndexedReader (footer, summary, chunk indexes,
//                                  CRCs) AND McapStreamReader (record by record, chunk CRCs); fails
//                                  unless both agree, the stream reached the footer, and the
//                                  summary's Statistics match what was read.
//   node count.mjs FILE --partial  a file cut by a crash: the streaming reader only, counting every
//                                  message until the data runs out; prints {"messages":N}.
import { open, readFile } from "node:fs/promises";
import { McapIndexedReader, McapStreamReader } from "@mcap/core";

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
    const reader = await McapIndexedReader.Initialize({ readable });
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

function readStream(bytes, partial) {
  const reader = new McapStreamReader({ validateCrcs: true });
  reader.append(bytes);
  const topics = new Map();
  const counts = {};
  let messages = 0;
  for (let record; (record = reader.nextRecord()); ) {
    if (record.type === "Channel") topics.set(record.id, record.topic);
    if (record.type === "Message") {
      const topic = topics.get(record.channelId);
      if (topic === undefined) throw new Error(`stream reader: message on unknown channel ${record.channelId}`);
      counts[topic] = (counts[topic] ?? 0) + 1;
      messages += 1;
    }
  }
  if (!partial && !reader.done()) throw new Error("stream reader: the file ended before its footer");
  return { channels: sorted(counts), messages };
}

const [path, mode] = process.argv.slice(2);
if (!path) {
  console.error("usage: node count.mjs FILE [--partial]");
  process.exit(2);
}
try {
  const bytes = new Uint8Array(await readFile(path));
  if (mode === "--partial") {
    console.log(JSON.stringify({ messages: readStream(bytes, true).messages }));
  } else {
    const indexed = await readIndexed(path);
    const streamed = readStream(bytes, false);
    if (JSON.stringify(indexed) !== JSON.stringify(streamed)) {
      throw new Error(`readers disagree: indexed ${JSON.stringify(indexed)}, stream ${JSON.stringify(streamed)}`);
    }
    console.log(JSON.stringify(indexed));
  }
} catch (error) {
  console.error(`count.mjs: ${path}: ${error.message}`);
  process.exit(1);
}
