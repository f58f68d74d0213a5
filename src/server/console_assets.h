// The web console's files, embedded in the binary at build time (cmake/embed_console.cmake
// generates console_assets() from web/src/ and uPlot's build). server/console.h serves them.
#pragma once

#include <span>
#include <string_view>

namespace gpurent::server {

// One embedded file of the console.
struct ConsoleAsset {
  std::string_view name;          // "index.html", "app.js", ...: GET /console/<name>
  std::string_view content_type;  // with its charset for text
  std::string_view body;
  std::string_view gzipped;  // body, gzip-compressed
  std::string_view etag;     // quoted, from the body's hash
};

// Every embedded file, in name order.
std::span<const ConsoleAsset> console_assets();
// The file of that name; null when there is none.
const ConsoleAsset* find_console_asset(std::string_view name);

}  // namespace gpurent::server
