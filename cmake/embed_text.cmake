# Turns a text file into a C++ translation unit defining
#   std::string_view gpurent::embedded::openapi_document();
# Used for docs/openapi.json so the served document is the one in the repository.
file(READ ${INPUT} content)
set(delim "gpurent_embed")
file(WRITE ${OUTPUT} "// Generated from ${INPUT}; do not edit.\n#include <string_view>\n"
     "namespace gpurent::embedded {\nstd::string_view openapi_document() {\n"
     "  static constexpr std::string_view kText = R\"${delim}(${content})${delim}\";\n"
     "  return kText;\n}\n}  // namespace gpurent::embedded\n")
