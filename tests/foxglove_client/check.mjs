// ctest foxglove_live_client, step 2 (check.sh installs the npm packages first): a live session served by
// `platoon bridge`, read by an independent Foxglove WebSocket client (@foxglove/ws-protocol over ws), every
// message validated against @foxglove/schemas' JSON schemas with ajv.
//   node check.mjs PLATOON WORK_DIR
// Starts `platoon run` (an ego car, one lidar and a fusion node of it, on free loopback ports) and `platoon
// bridge`, then checks:
//   1. serverInfo has the parameters, parametersSubscribe and time capabilities; the scene, transforms and
//      the fused cloud are advertised with their Foxglove schema names;
//   2. scene, transforms and fused cloud messages validate against foxglove.SceneUpdate, FrameTransforms and
//      PointCloud; the cloud has the ring, time, intensity and source fields; time messages come;
//   3. a parameter set through the protocol changes the session (platoon ctl param get reads it) and is
//      logged with the source "bridge" (platoon ctl events); a refused value gets the server's error text;
//   4. a second client that stops reading its socket: the first client's transforms (one per world
//      broadcast) arrive no later than one broadcast period beyond where they came before the stall;
//   5. a bridge with --token refuses a client without it or with a wrong one (401) and serves the right one;
//   6. every sensor stream (lidar, IMU, GNSS, radar, object list, camera) and the world (/clock, /tf,
//      /tf_static, odometry) are advertised as ROS 2 channels (ros2msg, cdr); each message decodes with
//      @foxglove/rosmsg2-serialization from the advertised definition, its header stamp is its log time,
//      the cloud has Autoware's PointXYZIRCAEDT fields, and /tf_static holds the lidar's mount exactly.
// Prints one line of figures and "PASS", or "FAIL: why" with exit 1.
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import wsProtocol from "@foxglove/ws-protocol";
import WebSocket from "ws";
import Ajv from "ajv";
import { parse } from "@foxglove/rosmsg";
import { MessageReader } from "@foxglove/rosmsg2-serialization";
import * as schemasModule from "@foxglove/schemas/jsonschema.js";

const [platoon, work] = process.argv.slice(2).map((p) => path.resolve(p));
const schemas = schemasModule.default ?? schemasModule;
const { FoxgloveClient } = wsProtocol;  // a CommonJS package
const BROADCAST_HZ = 10;  // the world broadcast rate of the session: one period is 100 ms
const children = [];
const deadline = Date.now() + 60_000;

function fail(why) {
  console.log(`FAIL: ${why}`);
  for (const c of children) {
    try { process.kill(c.pid, "SIGINT"); } catch {}
  }
  process.exit(1);
}
setTimeout(() => fail("the check did not finish within 60 s"), 60_000).unref();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Waits until `pred()` holds, polling every 20 ms; fails naming `what` after `ms`.
async function until(pred, ms, what) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

// A process whose output goes to WORK/name.log; `lines` collects its stdout lines.
function start(name, args) {
  const log = fs.openSync(path.join(work, `${name}.log`), "w");
  const child = spawn(platoon, args, { cwd: work, stdio: ["ignore", "pipe", log] });
  child.lines = [];
  child.stdout.on("data", (d) => {
    fs.writeSync(log, d);
    child.lines.push(...d.toString().split("\n").filter((l) => l));
  });
  children.push(child);
  return child;
}

function ctl(controlPort, args) {
  return JSON.parse(execFileSync(platoon, ["ctl", "--server", `127.0.0.1:${controlPort}`, "--json", ...args],
                                 { encoding: "utf8", timeout: 15_000 }));
}

// --- the session -----------------------------------------------------------------------------------
fs.mkdirSync(work, { recursive: true });
const control = await freePort();
const [timePort, worldPort, statePort, wsPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
const session = `[session]
name = "foxglove-check"
server_host = "127.0.0.1"
[server]
bind_address = "127.0.0.1"
control_port = ${control}
time_port = ${timePort}
world_port = ${worldPort}
state_port = ${statePort}
broadcast_hz = ${BROADCAST_HZ}
[scene]
ground = true
[[scene.box]]
id = 101
position = [50.0, 0.0, 0.0]
size = [0.2, 0.2, 3.0]
[[node]]
name = "ego"
role = "traffic"
vehicles = 2
speed_mps = 20
track_center = [0.0, 0.0]
[[node]]
name = "lidar_front"
role = "sensor"
attach_to = "ego"
[[node.sensor]]
id = "lidar_front"
type = "lidar"
preset = "vlp16"
position = [3.7, 0.0, 1.0]
rpy_deg = [0.0, 0.0, 0.0]
[[node.sensor]]
id = "imu_front"
type = "imu"
position = [1.3, 0.1, 0.5]
rate_hz = 50
[[node.sensor]]
id = "gnss_roof"
type = "gnss"
position = [1.0, 0.0, 1.5]
rate_hz = 10
origin_lat_deg = 52.167
origin_lon_deg = 10.549
origin_alt_m = 80
[[node.sensor]]
id = "radar_front"
type = "radar"
position = [3.8, 0.0, 0.5]
rate_hz = 10
[[node.sensor]]
id = "objects_front"
type = "objects"
position = [3.7, 0.0, 0.5]
rate_hz = 10
[[node.sensor]]
id = "camera_front"
type = "camera"
position = [1.8, 0.0, 1.3]
image_width_px = 320
image_height_px = 180
rate_hz = 5
render = "none"
[[node]]
name = "fusion"
role = "fusion"
attach_to = "ego"
[node.fusion]
sources = ["lidar_front"]
period_s = 0.1
stream_id = "fused_front"
`;
const sessionFile = path.join(work, "session.toml");
fs.writeFileSync(sessionFile, session);
const run = start("run", ["run", sessionFile]);
run.on("exit", (code) => fail(`platoon run exited early (${code}); see ${work}/run.log`));

// The bridge once the fusion node is in the node table (its stream then has a channel from the start).
await until(() => {
  try {
    return ctl(control, ["status"]).nodes.some((n) => n.name === "fusion");
  } catch { return false; }
}, 30_000, "the session's fusion node to join");
const bridge = start("bridge", ["bridge", sessionFile, "--port", String(wsPort), "--send-buffer-mb", "1"]);
bridge.on("exit", (code) => fail(`platoon bridge exited early (${code}); see ${work}/bridge.log`));
await until(() => bridge.lines.some((l) => l.includes("served on ws://")), 15_000, "the bridge to listen");

// --- client 1: the independent client ---------------------------------------------------------------
const ajv = new Ajv({ strict: false, allErrors: true });
const validators = {
  "foxglove.SceneUpdate": ajv.compile(schemas.SceneUpdate),
  "foxglove.FrameTransforms": ajv.compile(schemas.FrameTransforms),
  "foxglove.PointCloud": ajv.compile(schemas.PointCloud),
};
const client = new FoxgloveClient({ ws: new WebSocket(`ws://127.0.0.1:${wsPort}`, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
let serverInfo = null;
const channels = new Map();      // id -> channel
const bySub = new Map();         // subscription id -> channel
const received = new Map();      // topic -> count of valid messages
const tfArrivals = [];           // [wall ms, sim ns] of each transforms message
const times = [];                // time messages (sim ns)
const statuses = [];
const paramValues = [];
let cloudFields = null;
const rosReaders = new Map();    // channel id -> MessageReader of its ros2msg definition
const rosLast = new Map();       // topic -> { message, timestamp } of the newest ROS 2 message
// Autoware's PointXYZIRCAEDT: name, offset, PointField datatype (UINT8 2, UINT16 4, UINT32 6, FLOAT32 7).
const AUTOWARE = [
  ["x", 0, 7], ["y", 4, 7], ["z", 8, 7], ["intensity", 12, 2], ["return_type", 13, 2], ["channel", 14, 4],
  ["azimuth", 16, 7], ["elevation", 20, 7], ["distance", 24, 7], ["time_stamp", 28, 6],
];
client.on("error", (e) => fail(`client error: ${e}`));
client.on("serverInfo", (i) => { serverInfo = i; });
client.on("status", (s) => statuses.push(s));
client.on("advertise", (list) => {
  for (const c of list) {
    channels.set(c.id, c);
    if (c.encoding === "cdr") {
      if (c.schemaEncoding !== "ros2msg") fail(`${c.topic}: cdr with the schema encoding ${c.schemaEncoding}`);
      try {
        rosReaders.set(c.id, new MessageReader(parse(c.schema, { ros2: true })));
      } catch (e) { fail(`${c.topic}: its ${c.schemaName} definition does not parse: ${e}`); }
    }
  }
});
client.on("time", (t) => times.push(t.timestamp));
client.on("parameterValues", (v) => paramValues.push(v));
client.on("message", ({ subscriptionId, timestamp, data }) => {
  const channel = bySub.get(subscriptionId);
  if (!channel) fail(`a message for unknown subscription ${subscriptionId}`);
  if (channel.encoding === "cdr") {
    let message;
    try {
      message = rosReaders.get(channel.id).readMessage(data);
    } catch (e) { fail(`${channel.topic}: a ${channel.schemaName} that does not decode: ${e}`); }
    rosLast.set(channel.topic, { message, timestamp });
    received.set(channel.topic, (received.get(channel.topic) ?? 0) + 1);
    return;
  }
  const text = new TextDecoder().decode(data);
  const message = JSON.parse(text);
  const validate = validators[channel.schemaName];
  if (!validate(message)) fail(`${channel.topic}: not a valid ${channel.schemaName}: ${ajv.errorsText(validate.errors)}`);
  if (channel.schemaName === "foxglove.PointCloud") cloudFields = message.fields.map((f) => f.name);
  if (channel.schemaName === "foxglove.FrameTransforms") tfArrivals.push([performance.now(), timestamp]);
  received.set(channel.topic, (received.get(channel.topic) ?? 0) + 1);
});

await until(() => serverInfo && channels.size >= 3, 10_000, "serverInfo and the advertisement of three channels");
for (const cap of ["parameters", "parametersSubscribe", "time"])
  if (!serverInfo.capabilities.includes(cap)) fail(`serverInfo lacks the capability ${cap}: ${serverInfo.capabilities}`);
const topic = (t) => [...channels.values()].find((c) => c.topic === t) ?? fail(`no channel ${t}; advertised: ${[...channels.values()].map((c) => c.topic)}`);
const scene = topic("/foxglove/scene"), tf = topic("/foxglove/tf"), cloud = topic("/foxglove/cloud/fused_front");
for (const [c, name] of [[scene, "foxglove.SceneUpdate"], [tf, "foxglove.FrameTransforms"], [cloud, "foxglove.PointCloud"]])
  if (c.schemaName !== name || c.encoding !== "json" || c.schemaEncoding !== "jsonschema") fail(`${c.topic}: ${JSON.stringify({ ...c, schema: undefined })}`);
for (const c of [scene, tf, cloud]) bySub.set(client.subscribe(c.id), c);

await until(() => (received.get(scene.topic) ?? 0) >= 1 && (received.get(tf.topic) ?? 0) >= 5 &&
                  (received.get(cloud.topic) ?? 0) >= 2 && times.length >= 5, 15_000,
            "a scene, five transforms, two fused clouds and five time messages");
for (const f of ["x", "y", "z", "intensity", "ring", "time", "source"])
  if (!cloudFields.includes(f)) fail(`the fused cloud has no field ${f}: ${cloudFields}`);
for (let i = 1; i < times.length; ++i) if (times[i] < times[i - 1]) fail(`time went backwards: ${times[i - 1]} -> ${times[i]}`);

// --- ROS 2 channels ---------------------------------------------------------------------------------
// Named after the vehicle the sensors ride on, advertised as each stream's first message names them.
const rosTopic = (re) => [...channels.values()].find((c) => c.encoding === "cdr" && re.test(c.topic));
const wantedRos = {
  "/clock": [/^\/clock$/, "rosgraph_msgs/msg/Clock"],
  "/tf": [/^\/tf$/, "tf2_msgs/msg/TFMessage"],
  "/tf_static": [/^\/tf_static$/, "tf2_msgs/msg/TFMessage"],
  odom: [/^\/[a-z0-9_]+\/odom$/, "nav_msgs/msg/Odometry"],
  points: [/\/lidar_front\/points$/, "sensor_msgs/msg/PointCloud2"],
  fused: [/\/fused_front\/points$/, "sensor_msgs/msg/PointCloud2"],
  imu: [/\/imu_front\/imu$/, "sensor_msgs/msg/Imu"],
  fix: [/\/gnss_roof\/fix$/, "sensor_msgs/msg/NavSatFix"],
  scan: [/\/radar_front\/scan$/, "radar_msgs/msg/RadarScan"],
  tracks: [/\/radar_front\/tracks$/, "radar_msgs/msg/RadarTracks"],
  objects: [/\/objects_front\/objects$/, "vision_msgs/msg/Detection3DArray"],
  camera_info: [/\/camera_front\/camera_info$/, "sensor_msgs/msg/CameraInfo"],
};
await until(() => Object.values(wantedRos).every(([re]) => rosTopic(re)), 15_000,
            `the ROS 2 channels ${Object.keys(wantedRos)} (advertised: ${[...channels.values()].map((c) => c.topic)})`);
const rosChannels = {};
for (const [key, [re, type]] of Object.entries(wantedRos)) {
  const c = rosTopic(re);
  if (c.schemaName !== type) fail(`${c.topic}: schema ${c.schemaName}, expected ${type}`);
  rosChannels[key] = c;
}
const rosSubs = Object.values(rosChannels).map((c) => {
  const id = client.subscribe(c.id);
  bySub.set(id, c);
  return id;
});
await until(() => Object.values(rosChannels).every((c) => rosLast.has(c.topic)), 15_000,
            `a message on each ROS 2 channel (got: ${[...rosLast.keys()]})`);
const stampOf = (t) => BigInt(t.sec) * 1000000000n + BigInt(t.nanosec);
for (const [key, c] of Object.entries(rosChannels)) {
  const { message, timestamp } = rosLast.get(c.topic);
  const stamp = key === "/clock" ? message.clock : key === "/tf" || key === "/tf_static" ? message.transforms[0].header.stamp
                                                                                          : message.header.stamp;
  if (key !== "/tf_static" && key !== "/tf" && key !== "odom" && stampOf(stamp) !== BigInt(timestamp))
    fail(`${c.topic}: header stamp ${stampOf(stamp)} is not its log time ${timestamp}`);
}
const cloud2 = rosLast.get(rosChannels.points.topic).message;
const fields = cloud2.fields.map((f) => [f.name, f.offset, f.datatype]);
if (JSON.stringify(fields) !== JSON.stringify(AUTOWARE)) fail(`the lidar's PointCloud2 fields ${JSON.stringify(fields)}`);
if (cloud2.point_step !== 32 || cloud2.width < 1 || cloud2.data.length !== cloud2.width * 32)
  fail(`the lidar's PointCloud2: point_step ${cloud2.point_step}, width ${cloud2.width}, ${cloud2.data.length} bytes`);
const mount = rosLast.get(rosChannels["/tf_static"].topic).message.transforms.find((t) => t.child_frame_id.endsWith("/lidar_front"));
if (!mount || mount.transform.translation.x !== 3.7 || mount.transform.translation.y !== 0 || mount.transform.translation.z !== 1.0 ||
    mount.transform.rotation.w !== 1)
  fail(`/tf_static: the lidar's mount is ${JSON.stringify(mount)}, expected (3.7, 0, 1.0) unrotated`);
if (!mount.header.frame_id.endsWith("/base_link")) fail(`/tf_static: the lidar's parent ${mount.header.frame_id}`);
const imu = rosLast.get(rosChannels.imu.topic).message;
if (!imu.header.frame_id.endsWith("/imu_front") || imu.orientation_covariance[0] !== -1)
  fail(`the IMU: frame ${imu.header.frame_id}, orientation_covariance[0] ${imu.orientation_covariance[0]}`);
// sensor_msgs/Imu holds the specific force: a level IMU reads +g up (REP 145).
if (Math.abs(imu.linear_acceleration.z - 9.81) > 1.0) fail(`the IMU's linear_acceleration.z is ${imu.linear_acceleration.z}, expected about +9.81`);
const fix = rosLast.get(rosChannels.fix.topic).message;
if (Math.abs(fix.latitude - 52.167) > 0.01 || Math.abs(fix.longitude - 10.549) > 0.01)
  fail(`the GNSS fix at ${fix.latitude}, ${fix.longitude}, expected near the origin 52.167, 10.549`);
const info = rosLast.get(rosChannels.camera_info.topic).message;
if (info.width !== 320 || info.height !== 180 || !info.header.frame_id.endsWith("/camera_front_optical"))
  fail(`the camera info: ${info.width}x${info.height} in ${info.header.frame_id}`);
const rosCounts = Object.fromEntries(Object.entries(rosChannels).map(([k, c]) => [k, received.get(c.topic)]));
for (const id of rosSubs) client.unsubscribe(id);

// --- parameters -------------------------------------------------------------------------------------
const before = ctl(control, ["param", "get", "server.status_interval_s"]).param.value;
const wanted = Number(before) === 7 ? 8 : 7;
client.subscribeParameterUpdates(["server.status_interval_s"]);
client.setParameters([{ name: "server.status_interval_s", value: wanted }], "set-1");
await until(() => paramValues.some((v) => v.id === "set-1"), 10_000, "the parameterValues answer of the set");
const answer = paramValues.find((v) => v.id === "set-1").parameters[0];
if (answer.name !== "server.status_interval_s" || Number(answer.value) !== wanted) fail(`set answered ${JSON.stringify(answer)}`);
const after = ctl(control, ["param", "get", "server.status_interval_s"]).param.value;
if (Number(after) !== wanted) fail(`the session's server.status_interval_s is ${after} after the set to ${wanted}`);
await until(() => ctl(control, ["events"]).events.some((e) => e.kind === "param" && e.source === "bridge" &&
                                                              e.text === `server.status_interval_s = ${after}`),
            10_000, "the parameter event with the source bridge in platoon ctl events");
await until(() => paramValues.some((v) => v.id === undefined && v.parameters.some((p) => Number(p.value) === wanted)),
            10_000, "the parameter update to the subscribed client");
// A refused value: the server's own error text comes back as an error status.
client.setParameters([{ name: "server.status_interval_s", value: -5 }], "set-2");
await until(() => statuses.some((s) => s.level === 2 && s.message.includes("server.status_interval_s")), 10_000,
            "the error status of a refused set");
const refusal = statuses.find((s) => s.level === 2 && s.message.includes("server.status_interval_s")).message;
let ctlRefusal = "";
try {
  execFileSync(platoon, ["ctl", "--server", `127.0.0.1:${control}`, "param", "set", "server.status_interval_s", "-5"],
               { encoding: "utf8", stdio: ["ignore", "ignore", "pipe"], timeout: 15_000 });
} catch (e) {
  ctlRefusal = e.stderr.toString().trim().replace(/^platoon ctl param set: /, "");
}
if (!ctlRefusal || !refusal.endsWith(ctlRefusal)) fail(`the bridge's refusal "${refusal}" is not ctl's "${ctlRefusal}"`);

// --- a client that stops reading ---------------------------------------------------------------------
const stalled = new WebSocket(`ws://127.0.0.1:${wsPort}`, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
const stalledChannels = [];
stalled.on("message", (data, binary) => {
  if (binary) return;
  const m = JSON.parse(data.toString());
  if (m.op === "advertise") stalledChannels.push(...m.channels);
});
await until(() => stalledChannels.length >= 3, 10_000, "the second client's advertisement");
stalled.send(JSON.stringify({ op: "subscribe", subscriptions: stalledChannels.map((c, i) => ({ id: i, channelId: c.id })) }));
// The baseline: 1.8 s with both clients reading and nothing else in this process (the ctl calls above
// block its event loop, so their time is left out).
await sleep(2000);
// The offset of arrival (wall) from sim time: constant while transforms arrive as the server broadcasts.
const offsets = (from, to) => tfArrivals.filter(([w]) => w >= from && w < to).map(([w, ns]) => w - Number(ns) / 1e6);
const baselineFrom = performance.now() - 1800;
const stallFrom = performance.now();
stalled._socket.pause();  // reads nothing more: the kernel buffers fill, then the bridge's
await sleep(4000);
const stallTo = performance.now();
const base = offsets(baselineFrom, stallFrom).sort((a, b) => a - b);
const during = offsets(stallFrom, stallTo);
if (base.length < 5 || during.length < 20) fail(`too few transforms: ${base.length} before, ${during.length} during the stall`);
const baseline = base[Math.floor(base.length / 2)];
const worst = Math.max(...during) - baseline;
const period = 1000 / BROADCAST_HZ;
const gaps = [];
for (let i = 1; i < tfArrivals.length; ++i) if (tfArrivals[i][0] >= stallFrom) gaps.push(tfArrivals[i][0] - tfArrivals[i - 1][0]);
if (worst > period) fail(`while a client stalled, a transform came ${worst.toFixed(1)} ms later than before (one period: ${period} ms)`);
stalled.terminate();

// A bridge with --token: a client without the token is refused (HTTP 401), one with it gets serverInfo.
const tokenPort = await freePort();
const guarded = start("bridge_token", ["bridge", sessionFile, "--port", String(tokenPort), "--name", "bridge2", "--token", "s3cret"]);
await until(() => guarded.lines.some((l) => l.includes("served on ws://")), 15_000, "the bridge with a token to listen");
const attempt = (url) => new Promise((resolve) => {
  const ws = new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
  ws.on("unexpected-response", (_req, res) => { resolve(`refused ${res.statusCode}`); ws.terminate(); });
  ws.on("message", (data) => { resolve(`got ${JSON.parse(data.toString()).op}`); ws.close(); });
  ws.on("error", (e) => resolve(`error ${e.message}`));
});
const without = await attempt(`ws://127.0.0.1:${tokenPort}/`);
const wrong = await attempt(`ws://127.0.0.1:${tokenPort}/?token=s3creT`);
const withToken = await attempt(`ws://127.0.0.1:${tokenPort}/?token=s3cret`);
if (without !== "refused 401" || wrong !== "refused 401" || withToken !== "got serverInfo")
  fail(`token: without ${without}, wrong ${wrong}, with ${withToken}`);
process.kill(guarded.pid, "SIGINT");

// The bridge dropped frames for the stalled client (it says so when it stops), and no other.
client.close();
bridge.removeAllListeners("exit");
process.kill(bridge.pid, "SIGINT");
await until(() => bridge.lines.some((l) => l.includes("frames dropped")), 10_000, "the bridge to stop");
const dropped = Number(/(\d+) frames dropped/.exec(bridge.lines.find((l) => l.includes("frames dropped")))[1]);
if (!(dropped > 0)) fail("the bridge dropped no frame for the stalled client: was it stalled?");
run.removeAllListeners("exit");
process.kill(run.pid, "SIGINT");
await new Promise((r) => run.on("exit", r));

console.log(`scene ${received.get(scene.topic)}, transforms ${received.get(tf.topic)}, fused clouds ` +
            `${received.get(cloud.topic)}, time ${times.length}, all valid; parameter set ${before} -> ${after} logged ` +
            `by bridge, refusal "${refusal}"; stalled client: ${dropped} frames dropped, transforms at most ` +
            `${worst.toFixed(1)} ms later than before (period ${period} ms), largest gap ${Math.max(...gaps).toFixed(1)} ms; ` +
            `token: without ${without}, wrong ${wrong}, right ${withToken}; ROS 2 messages ${JSON.stringify(rosCounts)}, ` +
            `all decoded`);
console.log("PASS");
process.exit(0);
