"""Reading a commit of the fleet repo into core values, and writing the state tree.

No git here: ``gitops`` hands in file contents and takes out file contents.
"""
