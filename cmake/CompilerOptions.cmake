# memplan_target_options(TARGET): warnings (errors with MEMPLAN_WERROR) and the optional sanitizers,
# for our own code only.
function(memplan_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(MEMPLAN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(MEMPLAN_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(MEMPLAN_FUZZ)
    # Coverage for libFuzzer; the ASan runtime every executable links provides the callbacks.
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

if(MEMPLAN_SANITIZE)
  # Link flags must reach every executable, including ones that only link our library.
  add_link_options(-fsanitize=address,undefined)
endif()
