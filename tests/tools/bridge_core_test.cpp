// tools/src/bridge_core.cpp: the Foxglove WebSocket protocol core of platoon bridge, function level (JSON
// operations in, replies and parameter requests out). The live bridge is tested by tests/foxglove_client.
#include "../../tools/src/bridge_core.hpp"

#include "platoon/log/foxglove.hpp"

#include <doctest/doctest.h>

#include <cstring>

namespace bridge_core_test_detail {

using namespace platoon;
using bridge::JsonValue;

JsonValue Parsed(const std::string& text) {
  std::string error;
  auto v = bridge::ParseJson(text, error);
  INFO(text);
  REQUIRE_MESSAGE(v.has_value(), error);
  return *v;
}

std::vector<bridge::ChannelSpec> ThreeChannels() {
  return {{std::string(foxglove::kSceneTopic), std::string(foxglove::kSceneUpdate), std::string(foxglove::SceneUpdateSchema())},
          {std::string(foxglove::kTfTopic), std::string(foxglove::kFrameTransforms), std::string(foxglove::FrameTransformsSchema())},
          {foxglove::CloudTopic("fusion"), std::string(foxglove::kPointCloud), std::string(foxglove::PointCloudSchema())}};
}

// The texts of `fx` sent to `conn`, parsed.
std::vector<JsonValue> TextsTo(const bridge::Effects& fx, bridge::ConnId conn) {
  std::vector<JsonValue> out;
  for (const auto& t : fx.texts)
    if (t.conn == conn) out.push_back(Parsed(t.text));
  return out;
}

std::string Op(const JsonValue& v) { return v.Find("op") ? v.Find("op")->text : ""; }

}  // namespace bridge_core_test_detail

using namespace bridge_core_test_detail;

TEST_CASE("foxglove bridge: a new client gets serverInfo with parameters and time then every channel advertised") {
  bridge::BridgeCore core("platoon bridge: lab", "17");
  core.SetChannels(ThreeChannels());
  const auto texts = TextsTo(core.Open(4), 4);
  REQUIRE(texts.size() == 2);
  CHECK(Op(texts[0]) == "serverInfo");
  CHECK(texts[0].Find("name")->text == "platoon bridge: lab");
  CHECK(texts[0].Find("sessionId")->text == "17");
  std::vector<std::string> caps;
  for (const auto& c : texts[0].Find("capabilities")->items) caps.push_back(c.text);
  CHECK(caps == std::vector<std::string>{"parameters", "parametersSubscribe", "time"});
  REQUIRE(Op(texts[1]) == "advertise");
  const auto& channels = texts[1].Find("channels")->items;
  REQUIRE(channels.size() == 3);
  const auto specs = ThreeChannels();
  for (size_t i = 0; i < channels.size(); ++i) {
    CHECK(channels[i].Find("topic")->text == specs[i].topic);
    CHECK(channels[i].Find("schemaName")->text == specs[i].schema_name);
    CHECK(channels[i].Find("schema")->text == specs[i].schema);
    CHECK(channels[i].Find("encoding")->text == "json");
    CHECK(channels[i].Find("schemaEncoding")->text == "jsonschema");
    CHECK(core.ChannelOf(specs[i].topic) == static_cast<uint32_t>(channels[i].Find("id")->number));
  }
}

TEST_CASE("foxglove bridge: subscribe to an unknown channel id is answered with an error status and no subscription") {
  bridge::BridgeCore core("b", "1");
  core.SetChannels(ThreeChannels());
  core.Open(1);
  const uint32_t scene = *core.ChannelOf(foxglove::kSceneTopic);
  const uint32_t unknown = 1000;
  const auto fx = core.OnText(1, R"({"op":"subscribe","subscriptions":[{"id":7,"channelId":)" + std::to_string(unknown) +
                                     R"(},{"id":8,"channelId":)" + std::to_string(scene) + "}]}");
  const auto texts = TextsTo(fx, 1);
  REQUIRE(texts.size() == 1);
  CHECK(Op(texts[0]) == "status");
  CHECK(texts[0].Find("level")->number == bridge::kError);
  CHECK(texts[0].Find("message")->text.find("unknown channel id 1000") != std::string::npos);
  // The known one took.
  REQUIRE(fx.subscribed.size() == 1);
  CHECK(fx.subscribed[0].subscription_id == 8);
  CHECK(core.Subscribers(unknown).empty());
  const auto subs = core.Subscribers(scene);
  REQUIRE(subs.size() == 1);
  CHECK(subs[0].conn == 1);
  CHECK(subs[0].subscription_id == 8);
  // Unsubscribed: no one left.
  CHECK(TextsTo(core.OnText(1, R"({"op":"unsubscribe","subscriptionIds":[8]})"), 1).empty());
  CHECK(core.Subscribers(scene).empty());
}

TEST_CASE("foxglove bridge: malformed JSON and unknown operations get a status message not a crash") {
  bridge::BridgeCore core("b", "1");
  core.Open(2);
  const std::vector<std::string> bad = {"{\"op\":\"subscribe\",", "not json", "", "[1,2]", "{\"op\":5}",
                                        "{\"op\":\"advertise\",\"channels\":[]}", std::string(200, '['),
                                        "{\"op\":\"subscribe\",\"subscriptions\":[{\"id\":-1,\"channelId\":1.5}]}",
                                        "{\"op\":\"getParameters\",\"parameterNames\":[1]}", "\"\\ud800\""};
  for (const auto& text : bad) {
    INFO(text);
    const auto texts = TextsTo(core.OnText(2, text), 2);
    REQUIRE(texts.size() == 1);
    CHECK(Op(texts[0]) == "status");
    CHECK(texts[0].Find("level")->number == bridge::kError);
    CHECK(!texts[0].Find("message")->text.empty());
  }
  // The first names where the text ended.
  const auto texts = TextsTo(core.OnText(2, "{\"op\":\"subscribe\","), 2);
  CHECK(texts[0].Find("message")->text == "malformed JSON at byte 18: expected a field name in quotes, got the end of the text");
}

TEST_CASE("foxglove bridge: a refused parameter set gets the server's error text and an accepted one its value") {
  bridge::BridgeCore core("b", "1");
  core.Open(3);
  const auto fx = core.OnText(3, R"({"op":"setParameters","id":"r1","parameters":[)"
                                 R"({"name":"server.broadcast_hz","value":-5},{"name":"node.ego.label","value":"a \"b\""}]})");
  REQUIRE(fx.asks.size() == 2);
  const auto* set0 = std::get_if<protocol::ParamSet>(&fx.asks[0].request);
  const auto* set1 = std::get_if<protocol::ParamSet>(&fx.asks[1].request);
  REQUIRE((set0 && set1));
  CHECK(set0->path == "server.broadcast_hz");
  CHECK(set0->value == "-5");
  CHECK(set1->value == R"("a \"b\"")");
  CHECK(set0->request_id == fx.asks[0].request_id);
  CHECK(core.PendingParams() == 2);
  // The server's answers, the refusal first: nothing is sent until both are in.
  const std::string refusal = "server.broadcast_hz: expected a value in [1, 1000], got -5";
  CHECK(core.OnParamReply({false, {"server.broadcast_hz", "", false, ""}, refusal, fx.asks[0].request_id}).texts.empty());
  protocol::Parameter label{"node.ego.label", R"("a \"b\"")", true, "", "string"};
  const auto texts = TextsTo(core.OnParamReply({true, label, "", fx.asks[1].request_id}), 3);
  REQUIRE(texts.size() == 2);
  CHECK(Op(texts[0]) == "status");
  CHECK(texts[0].Find("level")->number == bridge::kError);
  CHECK(texts[0].Find("message")->text == "setParameters: " + refusal);
  CHECK(Op(texts[1]) == "parameterValues");
  CHECK(texts[1].Find("id")->text == "r1");
  const auto& values = texts[1].Find("parameters")->items;
  REQUIRE(values.size() == 1);
  CHECK(values[0].Find("name")->text == "node.ego.label");
  CHECK(values[0].Find("value")->text == "a \"b\"");
  CHECK(core.PendingParams() == 0);
  // Values platoon parameters cannot hold are refused without asking the server.
  const auto arrays = core.OnText(3, R"({"op":"setParameters","parameters":[{"name":"x","value":[1,2]}]})");
  CHECK(arrays.asks.empty());
  const auto arr_texts = TextsTo(arrays, 3);
  REQUIRE(!arr_texts.empty());
  CHECK(arr_texts[0].Find("message")->text.find("x: expected a number, boolean or string") != std::string::npos);
}

TEST_CASE("foxglove bridge: getParameters asks once per name or lists all and answers typed values with the id") {
  bridge::BridgeCore core("b", "1");
  core.Open(5);
  auto fx = core.OnText(5, R"({"op":"getParameters","parameterNames":["server.broadcast_hz","server.stale_policy"],"id":"g"})");
  REQUIRE(fx.asks.size() == 2);
  CHECK(std::get<protocol::ParamGet>(fx.asks[0].request).path == "server.broadcast_hz");
  core.OnParamReply({true, {"server.broadcast_hz", "60", true, "", "float"}, "", fx.asks[0].request_id});
  auto texts = TextsTo(core.OnParamReply({true, {"server.stale_policy", "\"hold\"", true, "", "string"}, "", fx.asks[1].request_id}), 5);
  REQUIRE(texts.size() == 1);
  const auto& values = texts[0].Find("parameters")->items;
  REQUIRE(values.size() == 2);
  CHECK(values[0].Find("value")->type == JsonValue::Type::kNumber);
  CHECK(values[0].Find("value")->number == 60.0);
  CHECK(values[0].Find("type")->text == "float64");
  CHECK(values[1].Find("value")->text == "hold");
  CHECK(texts[0].Find("id")->text == "g");
  // No names: one list request for every parameter.
  fx = core.OnText(5, R"({"op":"getParameters","parameterNames":[]})");
  REQUIRE(fx.asks.size() == 1);
  REQUIRE(std::holds_alternative<protocol::ParamListRequest>(fx.asks[0].request));
  protocol::ParamList list{{{"a.b", "true", true, "", "bool"}, {"a.c", "3", false, ""}}, fx.asks[0].request_id, {}};
  texts = TextsTo(core.OnParamList(list), 5);
  REQUIRE(texts.size() == 1);
  CHECK(texts[0].Find("parameters")->items.size() == 2);
  CHECK(texts[0].Find("parameters")->items[0].Find("value")->boolean == true);
  CHECK(texts[0].Find("id") == nullptr);
  // A closed client's answers go nowhere.
  fx = core.OnText(5, R"({"op":"getParameters","parameterNames":["x"]})");
  core.Close(5);
  CHECK(core.OnParamReply({true, {"x", "1", true, ""}, "", fx.asks[0].request_id}).texts.empty());
  CHECK(core.PendingParams() == 0);
}

TEST_CASE("foxglove bridge: parameter updates reach only the clients subscribed to that path") {
  bridge::BridgeCore core("b", "1");
  core.Open(1);
  core.Open(2);
  core.Open(3);
  core.OnText(1, R"({"op":"subscribeParameterUpdates","parameterNames":["server.broadcast_hz"]})");
  core.OnText(2, R"({"op":"subscribeParameterUpdates","parameterNames":[]})");
  const auto fx = core.OnParamChanged("server.broadcast_hz", "30");
  REQUIRE(fx.texts.size() == 2);
  CHECK(fx.texts[0].conn == 1);
  CHECK(fx.texts[1].conn == 2);
  const auto v = Parsed(fx.texts[0].text);
  CHECK(v.Find("parameters")->items[0].Find("value")->number == 30.0);
  CHECK(core.OnParamChanged("other.path", "1").texts.size() == 1);  // only the all-subscriber
  core.OnText(1, R"({"op":"unsubscribeParameterUpdates","parameterNames":["server.broadcast_hz"]})");
  CHECK(core.OnParamChanged("server.broadcast_hz", "31").texts.size() == 1);
}

TEST_CASE("foxglove bridge: message data and time frames carry opcode ids and little-endian times") {
  const std::string payload = "{\"a\":1}";
  const uint32_t sub = 0x01020304;
  const uint64_t t = 0x1122334455667788ull;
  const std::string frame = bridge::MessageDataFrame(sub, t, payload);
  REQUIRE(frame.size() == 1 + 4 + 8 + payload.size());
  CHECK(static_cast<uint8_t>(frame[0]) == 0x01);
  const unsigned char expected_head[] = {0x04, 0x03, 0x02, 0x01, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
  CHECK(std::memcmp(frame.data() + 1, expected_head, sizeof expected_head) == 0);
  CHECK(frame.substr(13) == payload);
  const std::string time = bridge::TimeFrame(1'500'000'000ull);
  REQUIRE(time.size() == 9);
  CHECK(static_cast<uint8_t>(time[0]) == 0x02);
  uint64_t back = 0;
  for (int i = 7; i >= 0; --i) back = (back << 8) | static_cast<uint8_t>(time[1 + i]);
  CHECK(back == 1'500'000'000ull);
}

TEST_CASE("foxglove bridge: a channel that leaves is unadvertised and its subscriptions end") {
  bridge::BridgeCore core("b", "1");
  auto specs = ThreeChannels();
  core.SetChannels(specs);
  core.Open(1);
  const uint32_t cloud = *core.ChannelOf(foxglove::CloudTopic("fusion"));
  core.OnText(1, R"({"op":"subscribe","subscriptions":[{"id":1,"channelId":)" + std::to_string(cloud) + "}]}");
  CHECK(core.Subscribers(cloud).size() == 1);
  specs.pop_back();
  specs.push_back({foxglove::CloudTopic("lidar_front"), std::string(foxglove::kPointCloud), std::string(foxglove::PointCloudSchema())});
  const auto texts = TextsTo(core.SetChannels(specs), 1);
  REQUIRE(texts.size() == 2);
  CHECK(Op(texts[0]) == "unadvertise");
  REQUIRE(texts[0].Find("channelIds")->items.size() == 1);
  CHECK(texts[0].Find("channelIds")->items[0].number == cloud);
  CHECK(Op(texts[1]) == "advertise");
  CHECK(texts[1].Find("channels")->items[0].Find("topic")->text == "/foxglove/cloud/lidar_front");
  CHECK(core.Subscribers(cloud).empty());
  CHECK(!core.ChannelOf(foxglove::CloudTopic("fusion")));
  // The same set again changes nothing.
  CHECK(core.SetChannels(specs).texts.empty());
}

TEST_CASE("foxglove bridge: tokens compare whole and come from the query string percent-decoded") {
  CHECK(bridge::TokenMatches("s3cret", "s3cret"));
  CHECK_FALSE(bridge::TokenMatches("s3cre", "s3cret"));
  CHECK_FALSE(bridge::TokenMatches("s3cretX", "s3cret"));
  CHECK_FALSE(bridge::TokenMatches("S3cret", "s3cret"));
  CHECK_FALSE(bridge::TokenMatches("", ""));
  CHECK(bridge::QueryValue("/?token=a%2Bb&x=1", "token") == std::optional<std::string>("a+b"));
  CHECK(bridge::QueryValue("/?x=1&token=zz", "token") == std::optional<std::string>("zz"));
  CHECK(!bridge::QueryValue("/", "token"));
  CHECK(!bridge::QueryValue("/?tokenx=1", "token"));
}

TEST_CASE("foxglove bridge: parameter values convert between TOML literals and JSON values") {
  CHECK(bridge::ParamValueJson("60", "float") == "60");
  CHECK(bridge::ParamValueJson("0.25", "") == "0.25");
  CHECK(bridge::ParamValueJson("true", "bool") == "true");
  CHECK(bridge::ParamValueJson("\"hold\"", "string") == "\"hold\"");
  CHECK(bridge::ParamValueJson("'raw\\x'", "") == "\"raw\\\\x\"");
  CHECK(bridge::ParamValueJson("inf", "float") == "\"inf\"");
  CHECK(bridge::ParamValueJson("1_000", "int") == "1000");
  std::string error;
  auto lit = [&](const std::string& json) { return bridge::TomlLiteralOf(Parsed(json), error); };
  CHECK(lit("30") == std::optional<std::string>("30"));
  CHECK(lit("0.1") == std::optional<std::string>("0.1"));
  CHECK(lit("false") == std::optional<std::string>("false"));
  CHECK(lit("\"x\\ny\"") == std::optional<std::string>("\"x\\ny\""));
  CHECK(!lit("null"));
  CHECK(error.find("cannot be unset") != std::string::npos);
  CHECK(!lit("{}"));
}
