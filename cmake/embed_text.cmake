# Turns a text file into a C++ translation unit defining
#   std::string_view gpurent::embedded::openapi_document();
# Used for docs/openapi.json so the served document is the one in the repository. A char array
# with its size, not a constexpr string_view of the literal: measuring a literal of this length
# in a constant expression exceeds GCC's loop limit.
file(READ ${INPUT} content)
set(delim "gpurent_embed")
file(WRITE ${OUTPUT} "// Generated from ${INPUT}; do not edit.\n#include <string_view>\n"
     "namespace gpurent::embedded {\nstd::string_view openapi_document() {\n"
     "  static constexpr char kText[] = R\"${delim}(${content})${delim}\";\n"
     "  return {kText, sizeof(kText) - 1};\n}\n}  // namespace gpurent::embedded\n")
