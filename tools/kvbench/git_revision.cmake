# Writes OUT (a header defining KVBENCH_GIT_REVISION) from the git revision
# of SRC at build time, touching it only when the revision changed, so the
# JSON's git_revision is the built one without rebuilding every time.
execute_process(
  COMMAND git -C ${SRC} rev-parse --short=12 HEAD
  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(
  COMMAND git -C ${SRC} status --porcelain --untracked-files=no
  OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT rev)
  set(rev unknown)
elseif(dirty)
  set(rev "${rev}-dirty")
endif()
set(text "#define KVBENCH_GIT_REVISION \"${rev}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
