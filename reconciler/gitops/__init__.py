"""The only git I/O: reading a commit, writing the state branch, pushing with a lease."""
