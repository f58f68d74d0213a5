#include "common/json_writer.h"

#include <fmt/format.h>

namespace gpurent {
namespace {

// What nlohmann's dump() writes for a character of a string: nullptr when the character stands
// for itself, "" when it is written as \u00xx, else its short escape.
const char* escape(char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return static_cast<unsigned char>(c) < 0x20 ? "" : nullptr;
  }
}

// The length of the valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF) that starts text[i], or 0 when none does.
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80;  // the second byte's range: narrower after some leads
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size() || byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = i + 2; k < i + length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

void JsonWriter::valid_string(std::string_view text) {
  out_ += '"';
  // Runs of characters that need no escape are appended whole: most strings are one run.
  size_t run = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char* escaped = escape(text[i]);
    if (!escaped) continue;
    out_.append(text, run, i - run);
    run = i + 1;
    if (escaped[0] != '\0') {
      out_ += escaped;
    } else {
      fmt::format_to(std::back_inserter(out_), "\\u{:04x}", static_cast<unsigned>(text[i]));
    }
  }
  out_.append(text, run);
  out_ += '"';
}

std::string replace_invalid_utf8(std::string_view text) {
  std::string replaced;  // stays empty while every sequence so far is valid: the common case
  size_t copied = 0;     // text before this is in `replaced`
  for (size_t i = 0; i < text.size();) {
    if (const size_t length = utf8_sequence_length(text, i); length > 0) {
      i += length;
      continue;
    }
    replaced.append(text, copied, i - copied);
    replaced += "\xEF\xBF\xBD";  // U+FFFD
    copied = ++i;
  }
  if (copied == 0) return std::string(text);
  replaced.append(text, copied);
  return replaced;
}

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0, length; i < text.size(); i += length) {
    length = utf8_sequence_length(text, i);
    if (length == 0) return false;
  }
  return true;
}

void JsonWriter::replaced_string(std::string_view text) {
  // Most text is valid: written without a copy.
  is_valid_utf8(text) ? valid_string(text) : valid_string(replace_invalid_utf8(text));
}

}  // namespace gpurent
