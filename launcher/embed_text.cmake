# cmake -DINPUT=file -DOUTPUT=header -DNAME=kName -P embed_text.cmake:
# writes OUTPUT, a header declaring `inline constexpr std::string_view NAME`
# holding the text of INPUT (the live job page, job_page.html).
file(READ "${INPUT}" text)
string(FIND "${text}" ")hvdtext\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds the raw string delimiter )hvdtext\"")
endif()
file(WRITE "${OUTPUT}.tmp" "// Generated from ${INPUT} by embed_text.cmake; do not edit.\n"
  "#pragma once\n#include <string_view>\nnamespace hvd::launcher {\n"
  "inline constexpr std::string_view ${NAME} = R\"hvdtext(${text})hvdtext\";\n}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
