#include "model/exec_protocol.h"

#include <fmt/format.h>

#include "common/json.h"

namespace gpurent::model {
namespace {

// The number of bytes of the UTF-8 sequence that `lead` starts (0: not a lead byte).
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 0;
}

std::string dump(const Json& json) {
  // Invalid UTF-8 in output becomes U+FFFD instead of an exception.
  return json.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace

Result<ExecRequest> parse_exec_request(std::string_view body) {
  if (body.size() > kMaxExecRequestBytes) {
    return fail(Error::invalid("invalid_body",
                               fmt::format("the request is over {} bytes", kMaxExecRequestBytes)));
  }
  GPURENT_TRY(json, parse_json_object(body));
  for (const auto& [key, value] : json.items()) {
    if (key != "command" && key != "timeout_s") {
      return fail(Error::invalid("unknown_field", fmt::format("unknown field '{}'", key)));
    }
  }
  ExecRequest request;
  GPURENT_TRY(command, optional_string_list(json, "command", kMaxExecArgs, kMaxExecArgBytes));
  if (command.empty() || command.front().empty()) {
    return fail(invalid_field("command", "must be a non-empty array of strings"));
  }
  for (const auto& arg : command) {
    if (arg.find('\0') != std::string::npos) {
      return fail(invalid_field("command", "arguments may not hold NUL bytes"));
    }
  }
  request.command = std::move(command);
  GPURENT_TRY(timeout, optional_int(json, "timeout_s", 1, kMaxExecTimeoutS));
  request.timeout_s = static_cast<int>(timeout.value_or(kDefaultExecTimeoutS));
  return request;
}

std::string exec_output_frame(ExecStream stream, std::string_view text) {
  return dump({{"stream", stream == ExecStream::kStdout ? "stdout" : "stderr"},
               {"data", std::string(text)}});
}

std::string exec_exit_frame(int exit_code, std::string_view error) {
  Json frame = {{"exit_code", exit_code}};
  if (!error.empty()) frame["error"] = std::string(error);
  return dump(frame);
}

size_t utf8_complete_prefix(std::string_view bytes) {
  // Look back at most 3 bytes for the lead byte of a sequence that the end cuts short.
  const size_t size = bytes.size();
  for (size_t back = 1; back <= 3 && back <= size; ++back) {
    const auto byte = static_cast<unsigned char>(bytes[size - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    const size_t needed = sequence_length(byte);
    // An ASCII byte, an invalid byte, or a sequence that is complete: nothing is held back.
    return needed > back ? size - back : size;
  }
  return size;
}

Result<std::vector<ExecFrame>> ExecFrameReader::feed(std::string_view bytes) {
  buffer_.append(bytes);
  std::vector<ExecFrame> frames;
  size_t start = 0;
  for (size_t newline; (newline = buffer_.find('\n', start)) != std::string::npos;
       start = newline + 1) {
    const std::string_view line(buffer_.data() + start, newline - start);
    const Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    const auto bad = [&] {
      return fail(Error::invalid("invalid_exec_frame",
                                 fmt::format("not an exec frame: {}", line.substr(0, 200))));
    };
    if (!json.is_object()) return bad();
    ExecFrame frame;
    if (const auto code = json.find("exit_code"); code != json.end()) {
      if (!code->is_number_integer()) return bad();
      frame.kind = ExecFrame::Kind::kExit;
      frame.exit_code = code->get<int>();
      if (const auto error = json.find("error"); error != json.end() && error->is_string()) {
        frame.error = error->get<std::string>();
      }
    } else {
      const auto stream = json.find("stream");
      const auto data = json.find("data");
      if (stream == json.end() || data == json.end() || !data->is_string() ||
          (*stream != "stdout" && *stream != "stderr")) {
        return bad();
      }
      frame.kind = *stream == "stdout" ? ExecFrame::Kind::kStdout : ExecFrame::Kind::kStderr;
      frame.data = data->get<std::string>();
    }
    frames.push_back(std::move(frame));
  }
  buffer_.erase(0, start);
  if (buffer_.size() > kMaxLineBytes) {
    return fail(Error::invalid("invalid_exec_frame", "a line of the exec stream is too long"));
  }
  return frames;
}

}  // namespace gpurent::model
