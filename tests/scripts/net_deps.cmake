# test-net starts tandem-node processes in network namespaces: build it with the tests.
if(TARGET test-net AND TARGET tandem-node)
  add_dependencies(test-net tandem-node)
endif()
