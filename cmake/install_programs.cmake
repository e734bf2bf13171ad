# `cmake --install BUILD --prefix P` installs the programs too: kvserver,
# kvcli, kvadmin, kvbench and rpmaperf into P/bin.
#
# They link our librpma.so, which is deliberately not installed where the
# linker looks (its SONAME is the real librpma 1.x's: in P/lib it would
# shadow a system librpma; see client/README.md). It goes to the private
# directory P/lib/rpkv/, and the programs find it there through an
# $ORIGIN-relative RUNPATH, so an installed tree works wherever it is
# moved, with no LD_LIBRARY_PATH.
include(GNUInstallDirs)
set(_rpkv_programs kvserver kvcli kvadmin kvbench rpmaperf)
set(_rpkv_private_libdir ${CMAKE_INSTALL_LIBDIR}/rpkv)
foreach(_p IN LISTS _rpkv_programs)
  if(TARGET ${_p})
    set_target_properties(${_p} PROPERTIES
      INSTALL_RPATH "$ORIGIN/../${_rpkv_private_libdir}")
    install(TARGETS ${_p} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
install(TARGETS rpma
        LIBRARY DESTINATION ${_rpkv_private_libdir} NAMELINK_SKIP)
