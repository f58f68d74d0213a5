#include "model/exec_protocol.h"

#include <gtest/gtest.h>

#include "model/instance.h"
#include "model/service_path.h"

namespace gpurent::model {
namespace {

TEST(ExecProtocolTest, ParsesARequestWithinItsBounds) {
  auto request = parse_exec_request(R"({"command": ["sh", "-c", "echo hi"], "timeout_s": 5})");
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(request->command, (std::vector<std::string>{"sh", "-c", "echo hi"}));
  EXPECT_EQ(request->timeout_s, 5);
  EXPECT_EQ(parse_exec_request(R"({"command": ["true"]})")->timeout_s, kDefaultExecTimeoutS);

  for (const char* bad :
       {R"({})", R"({"command": []})", R"({"command": [""]})", R"({"command": "echo"})",
        R"({"command": [1]})", R"({"command": ["true"], "timeout_s": 0})",
        R"({"command": ["true"], "timeout_s": 100000})", R"({"command": ["true"], "extra": 1})",
        "not json", "[]", R"({"command": ["a\u0000b"]})"}) {
    const auto refused = parse_exec_request(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(parse_exec_request(std::string(kMaxExecRequestBytes + 1, ' ')));
}

TEST(ExecProtocolTest, HoldsBackOnlyAnUnfinishedUtf8Sequence) {
  const std::string euro = "\xE2\x82\xAC";  // three bytes
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("a" + euro), 4u);
  EXPECT_EQ(utf8_complete_prefix("a" + euro.substr(0, 1)), 1u);
  EXPECT_EQ(utf8_complete_prefix("a" + euro.substr(0, 2)), 1u);
  EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\x98"), 1u);      // 3 of a 4-byte emoji
  EXPECT_EQ(utf8_complete_prefix("a\x80\x80\x80\x80"), 5u);  // garbage is not held forever
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);
}

TEST(ExecProtocolTest, FramesRoundTripThroughTheReaderWhateverThePieces) {
  const std::string stream = exec_output_frame(ExecStream::kStdout, "out\n") +
                             exec_output_frame(ExecStream::kStderr, "caf\xC3\xA9 \"q\"") +
                             exec_output_frame(ExecStream::kStdout, "bad \xFF byte") +
                             exec_exit_frame(124, "killed after the timeout of 1 s");
  for (size_t piece : {size_t{1}, size_t{7}, stream.size()}) {
    ExecFrameReader reader;
    std::vector<ExecFrame> frames;
    for (size_t at = 0; at < stream.size(); at += piece) {
      auto more = reader.feed(std::string_view(stream).substr(at, piece));
      ASSERT_TRUE(more) << more.error().message;
      frames.insert(frames.end(), more->begin(), more->end());
    }
    ASSERT_EQ(frames.size(), 4u);
    EXPECT_FALSE(reader.pending());
    EXPECT_EQ(frames[0].kind, ExecFrame::Kind::kStdout);
    EXPECT_EQ(frames[0].data, "out\n");
    EXPECT_EQ(frames[1].kind, ExecFrame::Kind::kStderr);
    EXPECT_EQ(frames[1].data, "caf\xC3\xA9 \"q\"");
    EXPECT_EQ(frames[2].data, "bad \xEF\xBF\xBD byte");  // U+FFFD
    EXPECT_EQ(frames[3].kind, ExecFrame::Kind::kExit);
    EXPECT_EQ(frames[3].exit_code, 124);
    EXPECT_EQ(frames[3].error, "killed after the timeout of 1 s");
  }
  EXPECT_EQ(exec_exit_frame(3), "{\"exit_code\":3}\n");
}

TEST(ExecProtocolTest, TheReaderRefusesWhatIsNotAFrame) {
  for (const char* bad : {"nonsense\n", "[1]\n", "{\"stream\":\"stdin\",\"data\":\"x\"}\n",
                          "{\"stream\":\"stdout\"}\n", "{\"exit_code\":\"3\"}\n"}) {
    ExecFrameReader reader;
    EXPECT_FALSE(reader.feed(bad)) << bad;
  }
  ExecFrameReader reader;
  EXPECT_FALSE(reader.feed(std::string(ExecFrameReader::kMaxLineBytes + 1, 'x')));
}

TEST(ServicePathTest, SplitsInstanceAndService) {
  auto path = parse_service_path("/i/i-abc/jupyter/api/kernels");
  ASSERT_TRUE(path);
  EXPECT_EQ(path->instance_id, "i-abc");
  EXPECT_EQ(path->service, "jupyter");
  EXPECT_FALSE(path->needs_slash);
  EXPECT_FALSE(parse_service_path("/i/i-abc/jupyter/")->needs_slash);
  EXPECT_TRUE(parse_service_path("/i/i-abc/jupyter")->needs_slash);
  EXPECT_EQ(parse_service_path("/i/i-abc/my-lab2/x")->service, "my-lab2");
  for (const char* bad :
       {"/i/", "/i/i-abc", "/i/i-abc/", "/i//jupyter/", "/v1/i/x/jupyter/", "/i/i-abc/Jupyter/",
        "/i/i-abc/9lab/", "/i/i.abc/jupyter/", "/i/i-abc/jupyter_lab/"}) {
    const auto refused = parse_service_path(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().kind, ErrorKind::kNotFound) << bad;
  }
  EXPECT_EQ(service_base_url("i-abc", "jupyter"), "/i/i-abc/jupyter/");
}

TEST(ServicePathTest, ServiceNames) {
  EXPECT_TRUE(valid_service_name("jupyter"));
  EXPECT_TRUE(valid_service_name("a"));
  EXPECT_TRUE(valid_service_name("tensor-board2"));
  EXPECT_TRUE(valid_service_name(std::string(31, 'a')));
  EXPECT_FALSE(valid_service_name(std::string(32, 'a')));
  EXPECT_FALSE(valid_service_name(""));
  EXPECT_FALSE(valid_service_name("2lab"));
  EXPECT_FALSE(valid_service_name("-lab"));
  EXPECT_FALSE(valid_service_name("Lab"));
  EXPECT_FALSE(valid_service_name("la_b"));
}

TEST(SshKeyTest, OpenSshPublicKeyLines) {
  const std::string ed25519 =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICwa4sBUcPlIif1WN+56sNJou2Z1eM/g65b0pLsYOSty";
  EXPECT_TRUE(valid_ssh_public_key(ed25519));
  EXPECT_TRUE(valid_ssh_public_key(ed25519 + " alice@laptop"));
  EXPECT_TRUE(valid_ssh_public_key(
      "ecdsa-sha2-nistp256 "
      "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBGZhccSaSkjci/h/"
      "dDoPfyctUMdEIJ7k8dD3aHIKZUZK/QKVyNvnH2CjMR8XMOb23jME5PGV0/zE0mPYhv1m8+U="));
  EXPECT_FALSE(valid_ssh_public_key(""));
  EXPECT_FALSE(valid_ssh_public_key("ssh-ed25519"));
  EXPECT_FALSE(valid_ssh_public_key("ssh-ed25519 "));
  // The blob must name the type the line names, and be base64.
  EXPECT_FALSE(valid_ssh_public_key("ssh-rsa" + ed25519.substr(ed25519.find(' '))));
  EXPECT_FALSE(valid_ssh_public_key("ssh-ed25519 not*base64"));
  EXPECT_FALSE(valid_ssh_public_key("ssh-dss" + ed25519.substr(ed25519.find(' '))));
  // One line: a second key (or a cloud-config line) cannot ride along.
  EXPECT_FALSE(valid_ssh_public_key(ed25519 + "\n" + ed25519));
  EXPECT_FALSE(valid_ssh_public_key(ed25519 + " a\tb"));
  EXPECT_FALSE(valid_ssh_public_key(ed25519 + " " + std::string(kMaxSshKeyLength, 'c')));
}

}  // namespace
}  // namespace gpurent::model
