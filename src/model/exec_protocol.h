// `gpurent exec`: running a command in a running instance, and the framing of its output.
//
//   POST /v1/instances/{id}/exec   {"command": ["sh", "-c", "..."], "timeout_s": 600}
//   -> 200, Content-Type application/x-ndjson, chunked: one JSON object per line, as produced:
//        {"stream":"stdout","data":"..."}      output, in the order the node read it
//        {"stream":"stderr","data":"..."}
//        {"exit_code":3}                       last line: the command's exit status
//        {"exit_code":124,"error":"..."}       or why it ended otherwise (timeout: 124, as
//                                              timeout(1) reports)
//   Errors before the command starts are problem+json answers (400, 404, 409, 501 ...).
//
// The server forwards the request to the node's agent (node API, POST /v1/node/exec), which
// validates it with parse_exec_request and streams the frames. Output is text: bytes are cut on
// UTF-8 character boundaries (utf8_complete_prefix) and any invalid sequence becomes U+FFFD.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/field_table.h"
#include "common/result.h"
#include "model/json_form.h"

namespace gpurent::model {

inline constexpr std::string_view kExecContentType = "application/x-ndjson";
inline constexpr size_t kMaxExecRequestBytes = 64 * 1024;
inline constexpr size_t kMaxExecArgs = 256;
inline constexpr size_t kMaxExecArgBytes = 4096;
inline constexpr int kDefaultExecTimeoutS = 600;
inline constexpr int kMaxExecTimeoutS = 24 * 3600;
inline constexpr int kExecTimedOutCode = 124;

struct ExecRequest {
  std::vector<std::string> command;  // argv, run without a shell
  int timeout_s = kDefaultExecTimeoutS;
};

template <class V, schema::Of<ExecRequest> S>
void fields(V& visit, S& x) {
  visit("command", x.command);
  visit("timeout_s", x.timeout_s, schema::kOptional);
}

// Validates a request body: a JSON object with a non-empty "command" array of strings (at most
// kMaxExecArgs of at most kMaxExecArgBytes, no NUL) and an optional "timeout_s" in
// 1..kMaxExecTimeoutS; no other field. Errors are kInvalidArgument.
Result<ExecRequest> parse_exec_request(std::string_view body);

enum class ExecStream { kStdout, kStderr };

// One line of the stream, newline included.
std::string exec_output_frame(ExecStream stream, std::string_view text);
std::string exec_exit_frame(int exit_code, std::string_view error = {});

// The length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence: the rest
// (at most 3 bytes) waits for the next read.
size_t utf8_complete_prefix(std::string_view bytes);

struct ExecFrame {
  enum class Kind { kStdout, kStderr, kExit };
  Kind kind = Kind::kStdout;
  std::string data;   // kStdout, kStderr
  int exit_code = 0;  // kExit
  std::string error;  // kExit, when it did not end by itself
};

// Splits the response body into frames, whatever pieces it arrives in.
class ExecFrameReader {
 public:
  // Appends bytes and returns the frames completed by them; a line that is not a frame is an
  // Error "invalid_exec_frame".
  Result<std::vector<ExecFrame>> feed(std::string_view bytes);
  // A frame is at most a read of output (64 KiB) escaped; a longer line is not one.
  static constexpr size_t kMaxLineBytes = 4 << 20;
  // Bytes of an unfinished line (a stream cut short leaves some).
  bool pending() const { return !buffer_.empty(); }

 private:
  std::string buffer_;
};

}  // namespace gpurent::model
