"""The reporters the runtime gives a test runner inside the sandbox, as files: each is copied into a read-only
folder under a random name for one verify and loaded by the runner there (pytest's plugin, unittest's
launcher, node's reporter). They import nothing of the runtime, which the sandbox's interpreter does not
have; the runtime reads them as text and never imports them."""
