"""The small languages rules are written in, below every layer that reads them.

A program's argument grammar (`grammar`, the files of `programs/`), domain patterns (`domains`,
`net::egress-allowlist` and the proxies), the words deny reasons use for their reader
(`audience`), the shell's words and commands as the gate parses them (`shell_types`) and the shapes of
names, options and values the gate checks without `re` (`shapes`). Manifests validate with them, the gate and the
sandbox judge with them: one reading for all. Standard library only, each module importing no
other package of the runtime: they are on the hook's import path, a fresh process per tool call.
"""
