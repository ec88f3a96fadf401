"""`runtime console`: a local web view of the runs of a repository, read live from its state folder.

Safe by construction (``runtime.console.guard``): bound to loopback, a random token in the URL printed
first, then kept in the console origin's own storage and sent as a header (never a cookie, which every
other port of the host would get), the Host header checked against loopback names, a CSRF token on every
request that changes anything, a strict Content-Security-Policy, and every text a run or an agent wrote
escaped (``runtime.console.pages``).
"""
