// Reads a bag that `platoon export LOG --ros2 DIR` wrote with independent readers: @mcap/core (the MCAP
// file), @foxglove/rosmsg (the ros2msg definitions) and @foxglove/rosmsg2-serialization (every CDR
// message), and compares what it finds with what the sample writer says it recorded (EXPECT.json):
// topics, types, counts, header stamps, /tf_static mounts, last vehicle poses, the clouds' points in
// Autoware's PointXYZIRCAEDT layout, camera intrinsics and images, radar tracks, and metadata.yaml's fields
// as rosbag2 writes them. EXPECT.json with "live": true is a session log the recorder wrote with ros2 = true:
// the file metadata.yaml names ("file"), its platoon channels (capnp, JSON) passed over, /tf_static checked
// by its last message only ("free_stamps"), mounts within "mount_tolerance".
//   node check_ros2.mjs BAG_DIR EXPECT.json
import { open, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { McapIndexedReader } from "@mcap/core";
import { parse } from "@foxglove/rosmsg";
import { MessageReader } from "@foxglove/rosmsg2-serialization";
import { decompress as zstdDecompress } from "fzstd";
import lz4 from "lz4js";

// Autoware's PointXYZIRCAEDT as its point type declares it: name, byte offset, PointField datatype
// (UINT8 2, UINT16 4, UINT32 6, FLOAT32 7).
const AUTOWARE = [
  ["x", 0, 7], ["y", 4, 7], ["z", 8, 7], ["intensity", 12, 2], ["return_type", 13, 2], ["channel", 14, 4],
  ["azimuth", 16, 7], ["elevation", 20, 7], ["distance", 24, 7], ["time_stamp", 28, 6],
];

const problems = [];
function check(cond, msg) {
  if (!cond) problems.push(msg);
  return cond;
}
const stampNs = (t) => (BigInt(t.sec) * 1000000000n + BigInt(t.nanosec)).toString();

// metadata.yaml, the few shapes rosbag2 writes: "key: value" lines and the topics' "- topic_metadata:" blocks.
function readMetadata(text) {
  const lines = text.split("\n");
  const top = {};
  const topics = [];
  const files = [];
  let section = "";
  for (const line of lines) {
    const m = line.match(/^(\s*)(- )?([a-z_]+):\s*(.*)$/);
    if (!m) continue;
    const [, indent, dash, key, raw] = m;
    const value = raw.startsWith('"') ? JSON.parse(raw) : raw;
    if (indent.length === 2 && !dash) {
      section = key;
      if (value !== "") top[key] = value;
      continue;
    }
    if (section === "topics_with_message_count") {
      if (dash) topics.push({});
      if (key !== "topic_metadata") topics[topics.length - 1][key] = value;
    } else if (section === "relative_file_paths") {
      const f = line.match(/^\s*- (.*)$/);
      if (f) files.push(f[1]);
    } else if (section === "duration" || section === "starting_time") {
      top[section] = value;
    }
  }
  for (const line of lines) {
    const f = line.match(/^ {4}- (.+)$/);
    if (f && !f[1].includes(":") && !files.includes(f[1])) files.push(f[1]);
  }
  return { top, topics, files };
}

// Compressed chunks (a live recording's default is zstd), from independent npm packages pinned in the lock
// file: fzstd and lz4js. Each must give exactly the size the chunk names.
function exact(name, bytes, size) {
  if (BigInt(bytes.length) !== BigInt(size)) throw new Error(`${name}: decompressed ${bytes.length} bytes, the chunk says ${size}`);
  return bytes;
}
const decompressHandlers = {
  zstd: (buffer, size) => exact("zstd", zstdDecompress(buffer), size),
  lz4: (buffer, size) => exact("lz4", Uint8Array.from(lz4.decompress(buffer, Number(size))), size),
};

async function indexedReader(file) {
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
  return McapIndexedReader.Initialize({ readable, decompressHandlers });
}

function checkCloud(topic, msg, expectedPoints) {
  const fields = msg.fields.map((f) => [f.name, f.offset, f.datatype, f.count]);
  check(JSON.stringify(fields) === JSON.stringify(AUTOWARE.map((f) => [...f, 1])),
        `${topic}: fields ${JSON.stringify(fields)} are not Autoware's PointXYZIRCAEDT`);
  check(msg.point_step === 32, `${topic}: point_step ${msg.point_step}`);
  check(msg.height === 1 && msg.row_step === msg.width * 32, `${topic}: height ${msg.height} row_step ${msg.row_step} width ${msg.width}`);
  check(msg.data.length === msg.width * 32, `${topic}: ${msg.data.length} data bytes for ${msg.width} points`);
  check(msg.is_bigendian === false && msg.is_dense === true, `${topic}: is_bigendian ${msg.is_bigendian} is_dense ${msg.is_dense}`);
  if (!expectedPoints) return 0;
  if (!check(expectedPoints.length === msg.width, `${topic}: ${msg.width} points, recorded ${expectedPoints.length}`)) return 0;
  const view = new DataView(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength);
  let bad = 0;
  expectedPoints.forEach(([x, y, z, refl, ret, ring, t], i) => {
    const o = i * 32;
    const X = view.getFloat32(o, true), Y = view.getFloat32(o + 4, true), Z = view.getFloat32(o + 8, true);
    const d = Math.hypot(X, Y, Z);
    const ok = X === Math.fround(x) && Y === Math.fround(y) && Z === Math.fround(z) && view.getUint8(o + 12) === refl &&
               view.getUint8(o + 13) === ret && view.getUint16(o + 14, true) === ring &&
               Math.abs(view.getFloat32(o + 16, true) - Math.atan2(Y, X)) < 1e-6 &&
               Math.abs(view.getFloat32(o + 20, true) - Math.atan2(Z, Math.hypot(X, Y))) < 1e-6 &&
               Math.abs(view.getFloat32(o + 24, true) - d) <= 1e-6 * Math.max(1, d) &&
               view.getUint32(o + 28, true) === Math.round(Math.fround(t) * 1e9);
    if (!ok && bad++ < 3) problems.push(`${topic}: point ${i} differs from the recorded record ${JSON.stringify(expectedPoints[i])}`);
  });
  return expectedPoints.length;
}

const [bagDir, expectPath] = process.argv.slice(2);
if (!bagDir || !expectPath) {
  console.error("usage: node check_ros2.mjs BAG_DIR EXPECT.json");
  process.exit(2);
}
const expect = JSON.parse(await readFile(expectPath, "utf8"));

// metadata.yaml and the file it names.
const meta = readMetadata(await readFile(path.join(bagDir, "metadata.yaml"), "utf8"));
const bagName = path.basename(path.resolve(bagDir));
const fileName = expect.file ?? `${bagName}_0.mcap`;
check(meta.top.version === "5", `metadata.yaml: version ${meta.top.version}`);
check(meta.top.storage_identifier === "mcap", `metadata.yaml: storage_identifier ${meta.top.storage_identifier}`);
check(meta.files.length >= 1 && meta.files[0] === fileName, `metadata.yaml: files ${JSON.stringify(meta.files)}`);
const mcapPath = path.join(bagDir, fileName);
await stat(mcapPath);

const file = await open(mcapPath, "r");
const reader = await indexedReader(file);
if (!expect.live) check(reader.header.profile === "ros2", `header profile "${reader.header.profile}"`);
const decoders = new Map();
const rosChannels = new Map();
let platoonChannels = 0;
for (const [id, channel] of reader.channelsById) {
  if (expect.live && channel.messageEncoding !== "cdr") {
    // The session log's own channels beside the ROS 2 ones.
    check(channel.topic.startsWith("/platoon/") || channel.topic.startsWith("/foxglove/"), `${channel.topic}: neither ROS 2 nor platoon's`);
    platoonChannels += 1;
    continue;
  }
  rosChannels.set(id, channel);
  const schema = reader.schemasById.get(channel.schemaId);
  check(schema && schema.encoding === "ros2msg", `${channel.topic}: schema encoding ${schema?.encoding}`);
  check(channel.messageEncoding === "cdr", `${channel.topic}: message encoding ${channel.messageEncoding}`);
  check((channel.metadata.get("offered_qos_profiles") ?? "").startsWith("- history:"), `${channel.topic}: no offered_qos_profiles`);
  const expected = expect.topics[channel.topic];
  check(expected !== undefined, `unexpected topic ${channel.topic}`);
  check(!expected || schema.name === expected.type, `${channel.topic}: type ${schema?.name}, expected ${expected?.type}`);
  decoders.set(id, new MessageReader(parse(new TextDecoder().decode(schema.data), { ros2: true })));
}

// Every message decoded, exactly to its end.
const got = {};
const lastTransforms = {};
let staticTransforms = [];
let pointsChecked = 0;
const cloudIndex = {};
let messages = 0;
const lastDetections = {};
const lastTracks = {};
let cameraInfos = 0, images = 0;
const near = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
for await (const record of reader.readMessages({ validateCrcs: true })) {
  const channel = reader.channelsById.get(record.channelId);
  const topic = channel.topic;
  const dec = decoders.get(record.channelId);
  if (!dec) continue;
  const msg = dec.readMessage(record.data);
  check(!dec.lastReadHadTrailingBytes(), `${topic}: trailing bytes after a message`);
  messages += 1;
  const entry = (got[topic] ??= { count: 0, stamps: [] });
  entry.count += 1;
  if (msg.header) {
    entry.stamps.push(stampNs(msg.header.stamp));
    const frame = expect.frames[topic];
    if (frame !== undefined) check(msg.header.frame_id === frame, `${topic}: frame_id ${msg.header.frame_id}, expected ${frame}`);
  } else if (msg.clock) {
    entry.stamps.push(stampNs(msg.clock));
  } else if (msg.transforms) {
    entry.stamps.push(msg.transforms.length ? stampNs(msg.transforms[0].header.stamp) : "none");
    if (topic === "/tf_static") staticTransforms = msg.transforms;
    else for (const t of msg.transforms) lastTransforms[t.child_frame_id] = t;
  }
  if (msg.detections) lastDetections[topic] = msg.detections;
  if (msg.tracks) lastTracks[topic] = msg.tracks;
  const cam = expect.camera_info?.[topic];
  if (cam) {
    // [width, height, fx, fy, cx, cy]: K, P and the ideal camera's d, r.
    const [w, h, fx, fy, cx, cy] = cam;
    cameraInfos += 1;
    check(msg.width === w && msg.height === h, `${topic}: ${msg.width}x${msg.height}, expected ${w}x${h}`);
    const k = [fx, 0, cx, 0, fy, cy, 0, 0, 1], p = [fx, 0, cx, 0, 0, fy, cy, 0, 0, 0, 1, 0];
    check(k.every((v, i) => near(msg.k[i], v)), `${topic}: k ${JSON.stringify(Array.from(msg.k))}, expected ${JSON.stringify(k)}`);
    check(p.every((v, i) => near(msg.p[i], v)), `${topic}: p ${JSON.stringify(Array.from(msg.p))}`);
    check(msg.distortion_model === "plumb_bob" && msg.d.length === 5 && Array.from(msg.d).every((v) => v === 0),
          `${topic}: distortion ${msg.distortion_model} ${JSON.stringify(Array.from(msg.d))}`);
    check([1, 0, 0, 0, 1, 0, 0, 0, 1].every((v, i) => msg.r[i] === v), `${topic}: r is not the identity`);
  }
  const img = expect.images?.[topic];
  if (img) {
    // {encoding|format, width, height, step, sum}: the pixels' (or the file's) byte sum and length.
    images += 1;
    let sum = 0;
    for (const b of msg.data) sum += b;
    check(sum === img.sum && msg.data.length === img.length, `${topic}: ${msg.data.length} bytes summing to ${sum}, expected ${img.length} / ${img.sum}`);
    if (img.encoding) check(msg.encoding === img.encoding && msg.width === img.width && msg.height === img.height && msg.step === img.step && msg.is_bigendian === 0,
                            `${topic}: ${msg.encoding} ${msg.width}x${msg.height} step ${msg.step}`);
    if (img.format) check(msg.format === img.format, `${topic}: format ${msg.format}, expected ${img.format}`);
  }
  if (msg.fields) {
    const k = (cloudIndex[topic] = (cloudIndex[topic] ?? -1) + 1);
    pointsChecked += checkCloud(topic, msg, expect.clouds[topic]?.[k]);
  }
}
await file.close();

// Topics, counts and stamps.
for (const [topic, e] of Object.entries(expect.topics)) {
  const g = got[topic];
  if (!check(g !== undefined, `topic ${topic} missing`)) continue;
  if ((expect.free_stamps ?? []).includes(topic)) continue;
  check(g.count === e.stamps.length, `${topic}: ${g.count} messages, expected ${e.stamps.length}`);
  check(JSON.stringify(g.stamps) === JSON.stringify(e.stamps),
        `${topic}: stamps ${JSON.stringify(g.stamps.slice(0, 5))}..., expected ${JSON.stringify(e.stamps.slice(0, 5))}...`);
}

// /tf_static: each sensor's mount exactly; /tf: each vehicle's last pose exactly.
const asMount = (t) => ({ parent: t.header.frame_id, child: t.child_frame_id,
  t: [t.transform.translation.x, t.transform.translation.y, t.transform.translation.z],
  q: [t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z, t.transform.rotation.w] });
const byChild = (list) => JSON.stringify([...list].sort((a, b) => (a.child < b.child ? -1 : 1)));
const tol = expect.mount_tolerance ?? 0;
const sameMount = (a, b) => a.parent === b.parent && a.child === b.child &&
  a.t.every((v, i) => Math.abs(v - b.t[i]) <= tol) && a.q.every((v, i) => Math.abs(v - b.q[i]) <= tol);
const gotMounts = [...staticTransforms.map(asMount)].sort((a, b) => (a.child < b.child ? -1 : 1));
const wantMounts = [...expect.mounts].sort((a, b) => (a.child < b.child ? -1 : 1));
check(gotMounts.length === wantMounts.length && gotMounts.every((m, i) => sameMount(m, wantMounts[i])),
      `/tf_static: ${JSON.stringify(gotMounts)}, expected ${JSON.stringify(wantMounts)}`);
for (const [frame, pose] of Object.entries(expect.poses)) {
  const t = lastTransforms[frame];
  check(t && JSON.stringify(asMount(t)) === JSON.stringify(pose), `/tf ${frame}: ${t && JSON.stringify(asMount(t))}, expected ${JSON.stringify(pose)}`);
}

// Object lists: the last message's detections (class, box centre, size, track id; the hypothesis pose = centre).
for (const [topic, objects] of Object.entries(expect.objects ?? {})) {
  const got = (lastDetections[topic] ?? []).map((d) => [d.results[0]?.hypothesis.class_id,
    [d.bbox.center.position.x, d.bbox.center.position.y, d.bbox.center.position.z],
    [d.bbox.size.x, d.bbox.size.y, d.bbox.size.z], d.id]);
  check(JSON.stringify(got) === JSON.stringify(objects), `${topic}: detections ${JSON.stringify(got)}, expected ${JSON.stringify(objects)}`);
  for (const d of lastDetections[topic] ?? [])
    check(JSON.stringify(d.results[0].pose.pose.position) === JSON.stringify(d.bbox.center.position), `${topic}: hypothesis pose is not the box centre`);
}

// Radar tracks: the last message's [uuid as a number, x, y, size x, size y, classification].
for (const [topic, tracks] of Object.entries(expect.tracks ?? {})) {
  const gotTracks = (lastTracks[topic] ?? []).map((t) => {
    let id = 0n;
    for (let i = 7; i >= 0; i--) id = id * 256n + BigInt(t.uuid.uuid[i]);
    check(Array.from(t.uuid.uuid).slice(8).every((b) => b === 0), `${topic}: uuid bytes 8..15 not 0`);
    return [id.toString(), Math.fround(t.position.x), Math.fround(t.position.y), Math.fround(t.size.x), Math.fround(t.size.y), t.classification];
  });
  check(JSON.stringify(gotTracks) === JSON.stringify(tracks), `${topic}: tracks ${JSON.stringify(gotTracks)}, expected ${JSON.stringify(tracks)}`);
}
if (expect.camera_info) check(cameraInfos > 0, "no CameraInfo message checked");
if (expect.images) {
  const want = Object.keys(expect.images).reduce((n, t) => n + (expect.topics[t]?.stamps.length ?? 0), 0);
  check(images === want, `${images} images checked, expected ${want}`);
}

// metadata.yaml's counts and types against the file (its ROS 2 channels).
check(meta.top.message_count === String(messages), `metadata.yaml: message_count ${meta.top.message_count}, file ${messages}`);
check(meta.topics.length === rosChannels.size, `metadata.yaml: ${meta.topics.length} topics, file ${rosChannels.size}`);
for (const t of meta.topics) {
  const channel = [...rosChannels.values()].find((c) => c.topic === t.name);
  if (!check(channel !== undefined, `metadata.yaml: topic ${t.name} not in the file`)) continue;
  check(t.type === reader.schemasById.get(channel.schemaId).name, `metadata.yaml: ${t.name} type ${t.type}`);
  check(t.serialization_format === "cdr", `metadata.yaml: ${t.name} serialization_format ${t.serialization_format}`);
  check(t.offered_qos_profiles === channel.metadata.get("offered_qos_profiles"), `metadata.yaml: ${t.name} offered_qos_profiles differ from the channel's`);
  check(t.message_count === String(got[t.name]?.count ?? 0), `metadata.yaml: ${t.name} message_count ${t.message_count}, file ${got[t.name]?.count}`);
}

const summary = { messages, topics: Object.keys(got).length, points_checked: pointsChecked, mounts: staticTransforms.length,
  camera_infos: cameraInfos, images, platoon_channels: platoonChannels,
  compressions: [...new Set(reader.chunkIndexes.map((c) => c.compression || "none"))].sort() };
console.log(JSON.stringify(summary));
if (problems.length) {
  for (const p of problems.slice(0, 30)) console.error("FAIL:", p);
  process.exit(1);
}
console.log("PASS");
