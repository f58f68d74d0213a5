# Turns the web console's files into a C++ translation unit defining
#   std::span<const gpurent::server::ConsoleAsset> gpurent::server::console_assets();
# (src/server/console_assets.h): each file's bytes, its gzip form (gzip -9, no name or time, so
# the output depends on the content alone) and a quoted ETag from its MD5.
#   -DINPUTS=a,b,... -DOUTPUT=... -DWORK=<a directory for the compressed files>
string(REPLACE "," ";" INPUTS "${INPUTS}")
file(MAKE_DIRECTORY ${WORK})
set(arrays "")
set(entries "")
set(index 0)
# In name order, as console_assets() promises.
set(named "")
foreach(input IN LISTS INPUTS)
  get_filename_component(name ${input} NAME)
  list(APPEND named "${name}|${input}")
endforeach()
list(SORT named)

function(as_bytes path out_var)
  file(READ ${path} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  set(${out_var} "${bytes}" PARENT_SCOPE)
endfunction()

foreach(pair IN LISTS named)
  string(REPLACE "|" ";" parts "${pair}")
  list(GET parts 0 name)
  list(GET parts 1 input)
  if(name MATCHES "\\.html$")
    set(type "text/html; charset=utf-8")
  elseif(name MATCHES "\\.js$")
    set(type "text/javascript; charset=utf-8")
  elseif(name MATCHES "\\.css$")
    set(type "text/css; charset=utf-8")
  elseif(name MATCHES "\\.svg$")
    set(type "image/svg+xml")
  elseif(name MATCHES "\\.json$")
    set(type "application/json")
  else()
    message(FATAL_ERROR "embed_console: no content type for ${name}")
  endif()
  set(gz ${WORK}/${name}.gz)
  execute_process(COMMAND gzip -9 -n -c ${input} OUTPUT_FILE ${gz} RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "embed_console: gzip ${input} failed")
  endif()
  as_bytes(${input} body)
  as_bytes(${gz} gzipped)
  file(SIZE ${input} body_size)
  file(SIZE ${gz} gzipped_size)
  file(MD5 ${input} md5)
  string(SUBSTRING ${md5} 0 20 etag)
  string(APPEND arrays "const unsigned char kBody${index}[] = {${body}0};\n"
         "const unsigned char kGzipped${index}[] = {${gzipped}0};\n")
  string(APPEND entries "    {\"${name}\", \"${type}\", view(kBody${index}, ${body_size}), "
         "view(kGzipped${index}, ${gzipped_size}), \"\\\"${etag}\\\"\"},\n")
  math(EXPR index "${index} + 1")
endforeach()

file(WRITE ${OUTPUT}.tmp
     "// Generated from the console's files by cmake/embed_console.cmake; do not edit.\n"
     "#include <array>\n#include \"server/console_assets.h\"\n"
     "namespace gpurent::server {\nnamespace {\n"
     "std::string_view view(const unsigned char* bytes, size_t size) {\n"
     "  return {reinterpret_cast<const char*>(bytes), size};\n}\n"
     "${arrays}"
     "const std::array<ConsoleAsset, ${index}> kAssets = {{\n${entries}}};\n"
     "}  // namespace\n"
     "std::span<const ConsoleAsset> console_assets() { return kAssets; }\n"
     "}  // namespace gpurent::server\n")
# Rewritten only when it changed: an unchanged console rebuilds nothing.
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
