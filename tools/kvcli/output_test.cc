#include "output.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kv::kvcli {
namespace {

struct Printed {
  std::string out, err;
  int code;
};

Printed Print(OutputOptions o, const Reply& r, std::string_view cmd = "get") {
  std::ostringstream out, err;
  Output output(o, out, err);
  Printed p;
  p.code = output.Print(cmd, r);
  p.out = out.str();
  p.err = err.str();
  return p;
}

constexpr OutputOptions kTty{.format = Format::kText, .stdout_tty = true};
constexpr OutputOptions kPipe{.format = Format::kText, .stdout_tty = false};
constexpr OutputOptions kJson{.format = Format::kJson};

TEST(OutputTest, ValueIsEscapedOnATerminalOnly) {
  std::ostringstream o, e;
  const std::string bin("a\0b\x1b[2J", 7);
  EXPECT_EQ(Output(kTty, o, e).Value(bin), R"("a\x00b\x1b[2J")");
  EXPECT_EQ(Output(kTty, o, e).Value("hello world"), "hello world");
  EXPECT_EQ(Output(kTty, o, e).Value("two\nlines"), "two\nlines");
  EXPECT_EQ(Output(kTty, o, e).Value(R"("q")"), R"("\"q\"")");
  EXPECT_EQ(Output(kTty, o, e).Value(""), R"("")");
  EXPECT_EQ(Output(kPipe, o, e).Value(bin), bin);
  OutputOptions raw = kTty;
  raw.raw = true;
  EXPECT_EQ(Output(raw, o, e).Value(bin), bin);
}

TEST(OutputTest, TextOkGoesToStdout) {
  Reply r;
  r.text = "v";
  auto p = Print(kPipe, r);
  EXPECT_EQ(p.out, "v\n");
  EXPECT_EQ(p.err, "");
  EXPECT_EQ(p.code, 0);
  r.newline = false;
  EXPECT_EQ(Print(kPipe, r).out, "v");
}

TEST(OutputTest, NotFoundOnStdoutOfATerminalElseStderr) {
  Reply r;
  r.status = Status::NotFound("key");
  auto tty = Print(kTty, r);
  EXPECT_EQ(tty.out, "(not found)\n");
  EXPECT_EQ(tty.code, 1);
  auto pipe = Print(kPipe, r);
  EXPECT_EQ(pipe.out, "");
  EXPECT_EQ(pipe.err, "(not found)\n");
  EXPECT_EQ(pipe.code, 1);
}

TEST(OutputTest, ErrorsWithHintOnStderrAndExitCodes) {
  Reply r;
  r.status = Status::Unavailable("cannot connect to 127.0.0.1:7400");
  r.hint = "start a server";
  auto p = Print(kTty, r);
  EXPECT_EQ(p.out, "");
  EXPECT_EQ(p.err,
            "error: unavailable: cannot connect to 127.0.0.1:7400\n"
            "hint: start a server\n");
  EXPECT_EQ(p.code, 3);
  r.status = Status::InvalidArgument("value too large");
  EXPECT_EQ(Print(kTty, r).code, 2);
  r.status = Status::NotFound("keyspace 'x' does not exist");
  r.exit_code = 3;
  p = Print(kPipe, r);
  EXPECT_EQ(p.code, 3);
  EXPECT_NE(p.err.find("error: not_found: keyspace 'x'"), std::string::npos);
}

TEST(OutputTest, JsonIsOneObjectPerReply) {
  Reply r;
  r.json.Bytes("key", "k").Bytes("value", std::string("\xff\x00", 2));
  auto p = Print(kJson, r);
  EXPECT_EQ(p.out,
            R"({"command":"get","status":"ok","key":"k","value_base64":"/wA="})"
            "\n");
  Reply e;
  e.status = Status::PermissionDenied("access key \"x\" wrong");
  e.hint = "pass --access_key";
  p = Print(kJson, e, "put");
  EXPECT_EQ(p.out,
            R"({"command":"put","status":"permission_denied",)"
            R"("error":"access key \"x\" wrong","hint":"pass --access_key"})"
            "\n");
  EXPECT_EQ(p.code, 3);
  EXPECT_EQ(p.err, "");
}

TEST(OutputTest, JsonQuoteEscapesControlsAndReplacesBadUtf8) {
  EXPECT_EQ(JsonQuote(std::string("a\"\\\n\x01\x7f", 6)),
            R"("a\"\\\n\u0001\u007f")");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(JsonQuote("\xc3"), R"("\ufffd")");
  EXPECT_EQ(JsonQuote("\x80z"), R"("\ufffdz")");
}

TEST(OutputTest, Base64) {
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foo"), "Zm9v");
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
}

}  // namespace
}  // namespace kv::kvcli
