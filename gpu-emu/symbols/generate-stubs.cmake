# Writes a C file with one weak stub per name of a symbol list: each stub reports the API as
# unsupported through `handler` and returns what it returns. The implemented entry points are
# strong definitions in other objects of the same library and replace the stubs at link time.
# Usage: eidolon_generate_stubs(<list file> <output .c> <handler function>)
function(eidolon_generate_stubs list output handler)
  file(STRINGS ${list} names)
  set(content "/* Generated from ${list}; do not edit. */\nextern int ${handler}(const char* api);\n")
  foreach(name IN LISTS names)
    if(name STREQUAL "" OR name MATCHES "^#")
      continue()
    endif()
    string(APPEND content
      "__attribute__((weak, visibility(\"default\"))) int ${name}(void) { return ${handler}(\"${name}\"); }\n")
  endforeach()
  eidolon_write_if_changed(${output} "${content}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${list})
endfunction()

# Writes `content` to `output` unless it already holds it (an unchanged file rebuilds nothing).
function(eidolon_write_if_changed output content)
  if(EXISTS ${output})
    file(READ ${output} previous)
  endif()
  if(NOT "${previous}" STREQUAL "${content}")
    file(WRITE ${output} "${content}")
  endif()
endfunction()
