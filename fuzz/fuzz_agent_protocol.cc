// The agent protocol (model/agent_protocol.h) from arbitrary bytes: the first byte picks a message.
//
//   0 a node's report (POST /v1/agent/report) as the server reads it (read_node_report, simdjson)
//   1 a desired state (GET /v1/agent/desired) as the agent reads it (read_desired_state)
//   2 a node's registration (POST /v1/agent/register), 3 its answer (decode_message)
//   4 an exec request (parse_exec_request), 5 an exec output stream (ExecFrameReader), 6 a
//     process's output framed by the agent (utf8_complete_prefix, exec_output_frame)
//   7 a copy's destination path and upload id (model/file_copy.h)
//   8 a report built by an agent from arbitrary strings (node_report_json: any bytes)
//
// Invariants: errors are values, never exceptions or crashes; the tree-less readers and nlohmann's
// reader of the same table agree whenever both accept a message; what is read is written
// (node_report_json, desired_state_json) and read back the same; desired_state_json is exactly
// dump(); a report's strings survive the trip (bytes that start no UTF-8 sequence as U+FFFD); an
// exec stream gives the same frames however it is cut; an accepted exec request or copy path
// keeps the documented bounds.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/json_writer.h"
#include "fuzz_check.h"
#include "model/agent_protocol.h"
#include "model/codec.h"
#include "model/desired_state_json.h"
#include "model/exec_protocol.h"
#include "model/file_copy.h"
#include "model/node_report_json.h"
#include "telemetry_compare.h"

namespace gpurent::model {
namespace {

using fuzz::shown;

void check_error(const Error& error, std::string_view text) {
  FUZZ_CHECK(error.kind == ErrorKind::kInvalidArgument && !error.code.empty(), "{} ({}) for {}",
             error.code, error.message, shown(text));
}

void check_report(std::string_view text) {
  auto report = read_node_report(text);
  std::optional<std::string> telemetry;
  auto undecoded = read_node_report(text, &telemetry);
  // Reading the telemetry text later (the server's telemetry thread) refuses no more than reading
  // it at once: the two differ only in the telemetry member.
  if (report) {
    FUZZ_CHECK(undecoded.has_value(), "accepted with its telemetry decoded, not without: {}",
               undecoded.error().message);
  }
  auto parsed = parse_json_object(text);
  if (!report) {
    check_error(report.error(), text);
    return;
  }
  const std::string written = node_report_json(*report);
  auto again = read_node_report(written);
  FUZZ_CHECK(again.has_value(), "its own form {} is refused: {}", shown(written),
             again.error().message);
  const auto without_telemetry = [](const NodeReport& r) {
    Json json = Json(r);
    json.erase("telemetry");
    return json;
  };
  FUZZ_CHECK(without_telemetry(*again) == without_telemetry(*report) &&
                 fuzz::same_after_trip(report->telemetry, again->telemetry),
             "{} read back otherwise", shown(written));
  FUZZ_CHECK(Json(*report).dump() == written, "node_report_json is not dump(): {}", shown(written));
  if (parsed) {
    if (auto tree = decode_message<NodeReport>(*parsed)) {
      FUZZ_CHECK(node_report_json(*tree) == written, "nlohmann read {} as {}, simdjson as {}",
                 shown(text), shown(node_report_json(*tree)), shown(written));
    }
  }
}

void check_desired(std::string_view text) {
  auto desired = read_desired_state(text);
  if (!desired) {
    check_error(desired.error(), text);
    return;
  }
  const std::string written = desired_state_json(*desired);
  FUZZ_CHECK(Json(*desired).dump() == written, "desired_state_json is not dump(): {}",
             shown(written));
  auto again = read_desired_state(written);
  FUZZ_CHECK(again.has_value(), "its own form {} is refused: {}", shown(written),
             again.error().message);
  FUZZ_CHECK(desired_state_json(*again) == written, "{} read back otherwise", shown(written));
  if (auto parsed = parse_json_object(text)) {
    if (auto tree = decode_message<DesiredState>(*parsed)) {
      FUZZ_CHECK(desired_state_json(*tree) == written, "nlohmann read {} as {}, simdjson as {}",
                 shown(text), shown(desired_state_json(*tree)), shown(written));
    }
  }
}

template <class T>
void check_tree_message(std::string_view text) {
  auto parsed = parse_json_object(text);
  if (!parsed) {
    check_error(parsed.error(), text);
    return;
  }
  auto message = decode_message<T>(*parsed);
  if (!message) {
    check_error(message.error(), text);
    return;
  }
  const Json written = Json(*message);
  auto again = decode_message<T>(written);
  FUZZ_CHECK(again && Json(*again) == written, "{} read back otherwise", shown(written.dump()));
  std::string direct;
  JsonWriter(direct).object(*message);
  FUZZ_CHECK(direct == written.dump(), "JsonWriter wrote {}, dump() {}", shown(direct),
             shown(written.dump()));
}

void check_exec_request(std::string_view text) {
  auto request = parse_exec_request(text);
  if (!request) {
    check_error(request.error(), text);
    return;
  }
  FUZZ_CHECK(!request->command.empty() && !request->command.front().empty() &&
                 request->command.size() <= kMaxExecArgs,
             "command of {} arguments", request->command.size());
  for (const auto& arg : request->command) {
    FUZZ_CHECK(arg.size() <= kMaxExecArgBytes && arg.find('\0') == std::string::npos, "arg {}",
               shown(arg));
  }
  FUZZ_CHECK(request->timeout_s >= 1 && request->timeout_s <= kMaxExecTimeoutS, "timeout {}",
             request->timeout_s);
  const Json sent = {{"command", request->command}, {"timeout_s", request->timeout_s}};
  auto again = parse_exec_request(sent.dump());
  FUZZ_CHECK(again && again->command == request->command && again->timeout_s == request->timeout_s,
             "{} read back otherwise", shown(sent.dump()));
}

bool same_frames(const std::vector<ExecFrame>& a, const std::vector<ExecFrame>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].kind != b[i].kind || a[i].data != b[i].data || a[i].exit_code != b[i].exit_code ||
        a[i].error != b[i].error) {
      return false;
    }
  }
  return true;
}

// The frames of `stream`, fed in pieces of the sizes `cuts` gives; nullopt after an error.
std::optional<std::vector<ExecFrame>> read_frames(std::string_view stream, std::string_view cuts) {
  ExecFrameReader reader;
  std::vector<ExecFrame> frames;
  size_t at = 0;
  for (size_t i = 0; at < stream.size(); ++i) {
    const size_t n = i < cuts.size() ? static_cast<uint8_t>(cuts[i]) : stream.size() - at;
    auto more = reader.feed(stream.substr(at, n));
    if (!more) {
      check_error(more.error(), stream);
      return std::nullopt;
    }
    frames.insert(frames.end(), more->begin(), more->end());
    at += std::min(n, stream.size() - at);
  }
  return frames;
}

void check_exec_stream(std::string_view input) {
  const size_t cut_count = input.empty() ? 0 : static_cast<uint8_t>(input.front()) % 16;
  input.remove_prefix(std::min(input.size(), size_t{1}));
  const std::string_view cuts = input.substr(0, cut_count);
  const std::string_view stream = input.substr(cuts.size());
  const auto whole = read_frames(stream, {});
  const auto pieces = read_frames(stream, cuts);
  FUZZ_CHECK(whole.has_value() == pieces.has_value() && (!whole || same_frames(*whole, *pieces)),
             "{} read whole and in pieces differ", shown(stream));
  if (!whole) return;
  // The frames written again as the agent writes them read back the same.
  std::string rewritten;
  for (const auto& frame : *whole) {
    rewritten +=
        frame.kind == ExecFrame::Kind::kExit
            ? exec_exit_frame(frame.exit_code, frame.error)
            : exec_output_frame(frame.kind == ExecFrame::Kind::kStdout ? ExecStream::kStdout
                                                                       : ExecStream::kStderr,
                                frame.data);
  }
  const auto again = read_frames(rewritten, {});
  FUZZ_CHECK(again && same_frames(*again, *whole), "{} re-framed as {} reads otherwise",
             shown(stream), shown(rewritten));
}

void check_exec_output(std::string_view output) {
  const size_t complete = utf8_complete_prefix(output);
  FUZZ_CHECK(complete <= output.size() && output.size() - complete <= 3, "{} of {}", complete,
             output.size());
  const std::string_view text = output.substr(0, complete);
  if (is_valid_utf8(output)) {
    FUZZ_CHECK(complete == output.size(), "valid UTF-8 held back: {}", shown(output));
  }
  if (is_valid_utf8(text.substr(0, complete))) {
    // A valid text is cut only between characters: the rest starts a sequence.
    FUZZ_CHECK(complete == output.size() || (static_cast<uint8_t>(output[complete]) & 0xC0) == 0xC0,
               "cut inside a character: {}", shown(output));
  }
  const std::string frame = exec_output_frame(ExecStream::kStderr, text);
  FUZZ_CHECK(!frame.empty() && frame.back() == '\n' && frame.find('\n') == frame.size() - 1,
             "a frame that is not one line: {}", shown(frame));
  ExecFrameReader reader;
  auto frames = reader.feed(frame);
  FUZZ_CHECK(frames && frames->size() == 1 && frames->front().kind == ExecFrame::Kind::kStderr &&
                 !reader.pending(),
             "the frame of {} does not read back", shown(text));
  FUZZ_CHECK(is_valid_utf8(frames->front().data), "invalid UTF-8 came through: {}",
             shown(frames->front().data));
  if (is_valid_utf8(text)) {
    FUZZ_CHECK(frames->front().data == text, "{} came back as {}", shown(text),
               shown(frames->front().data));
  }
}

void check_copy(std::string_view input) {
  fuzz::Input parts(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  const std::string_view upload = parts.until('\n');
  const std::string_view path = parts.rest();
  if (valid_upload_id(upload)) {
    FUZZ_CHECK(upload.starts_with("u-") && upload.find('/') == std::string_view::npos &&
                   upload.find('.') == std::string_view::npos,
               "upload id {}", shown(upload));
  }
  const auto components = path_components(path);
  for (const auto& component : components) {
    FUZZ_CHECK(!component.empty() && component != "." && component.find('/') == std::string::npos,
               "component {} of {}", shown(component), shown(path));
  }
  const auto checked = check_copy_path(path);
  if (!checked) {
    check_error(checked.error(), path);
    return;
  }
  FUZZ_CHECK(path.size() <= kMaxCopyPathLength, "{} bytes", path.size());
  for (const auto& component : components) {
    FUZZ_CHECK(component != "..", "{} climbs out", shown(path));
    for (const char c : component) {
      FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "a control character in {}",
                 shown(path));
    }
  }
}

// A report as an agent builds it: its strings come from the node (a process's message, the node
// API's address) and may hold any bytes.
void check_built_report(std::string_view input) {
  fuzz::Input parts(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  NodeReport report;
  report.applied_generation = parts.byte() * 1000003LL - 7;
  report.node_api_address = std::string(parts.until('\0'));
  report.node_api_secret = std::string(parts.until('\0'));
  if (parts.byte() & 1) report.container_runtime = true;
  while (!parts.empty() && report.workloads.size() < 8) {
    WorkloadStatus status;
    status.instance_id = std::string(parts.until('\0'));
    status.run = parts.byte();
    status.phase = static_cast<WorkloadPhase>(parts.byte() % 3);
    if (status.phase == WorkloadPhase::kExited) status.exit_code = parts.byte() - 128;
    status.message = std::string(parts.until('\0'));
    status.never_started = status.message.size() % 2;
    report.workloads.push_back(std::move(status));
  }
  const std::string written = node_report_json(report, int64_t{1'790'000'000'000});
  auto read = read_node_report(written);
  FUZZ_CHECK(read.has_value(), "the report {} is refused: {}", shown(written),
             read.error().message);
  FUZZ_CHECK(read->sent_at_ms == 1'790'000'000'000, "sent_at_ms");
  FUZZ_CHECK(read->node_api_address == replace_invalid_utf8(report.node_api_address) &&
                 read->node_api_secret == replace_invalid_utf8(report.node_api_secret) &&
                 read->applied_generation == report.applied_generation &&
                 read->container_runtime == report.container_runtime &&
                 read->workloads.size() == report.workloads.size(),
             "{} reads back otherwise", shown(written));
  for (size_t i = 0; i < report.workloads.size(); ++i) {
    const auto& want = report.workloads[i];
    const auto& have = read->workloads[i];
    FUZZ_CHECK(have.instance_id == replace_invalid_utf8(want.instance_id) &&
                   have.message == replace_invalid_utf8(want.message) && have.run == want.run &&
                   have.phase == want.phase && have.exit_code == want.exit_code &&
                   have.never_started == want.never_started,
               "workload {} of {} reads back otherwise", i, shown(written));
  }
}

}  // namespace
}  // namespace gpurent::model

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpurent::model;
  gpurent::fuzz::Input input(data, size);
  const uint8_t kind = input.byte();
  const std::string_view rest = input.rest();
  try {
    switch (kind % 9) {
      case 0:
        check_report(rest);
        break;
      case 1:
        check_desired(rest);
        break;
      case 2:
        check_tree_message<NodeRegistration>(rest);
        break;
      case 3:
        check_tree_message<RegistrationResult>(rest);
        break;
      case 4:
        check_exec_request(rest);
        break;
      case 5:
        check_exec_stream(rest);
        break;
      case 6:
        check_exec_output(rest);
        break;
      case 7:
        check_copy(rest);
        break;
      case 8:
        check_built_report(rest);
        break;
    }
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, "an exception escaped: {}", e.what());
  }
  return 0;
}
