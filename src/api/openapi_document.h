// The OpenAPI document (docs/openapi.json), embedded in the binary: the server serves it at
// /openapi.json, and the tests hold the routes and the typed bodies to it. The build generates the
// definition from the file (CMakeLists.txt, cmake/embed_text.cmake).
#pragma once

#include <string_view>

namespace gpurent::embedded {

std::string_view openapi_document();

}  // namespace gpurent::embedded
