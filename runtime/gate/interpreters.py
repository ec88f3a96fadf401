"""Interpreter one-liners: code given on the command line or on stdin.

``python -c``, ``perl -e``, ``node -e``, ``awk '...'``, a script read from
stdin, and ``sed`` scripts beyond plain printing and substitution all run code
the gate cannot judge; they are denied unless a rule sets ``inline-code``.
"""

from __future__ import annotations

from runtime.lang.shapes import is_python

_AWK = frozenset({"awk", "gawk", "mawk", "nawk"})


class _Spec:
    """How an interpreter reads its command line, as far as finding code given inline goes.

    ``code``: letters whose value is code (`-e CODE`, `-eCODE`); ``code_long``: long options whose value is
    code; ``valued``: letters taking a value, attached or the next word; ``attached``: letters taking the rest
    of the word as their value, never the next word (perl's `-i.bak`, `-Mstrict`, `-x`); ``digits``: letters
    whose value is the characters of the given set right after them, after which the cluster goes on (perl's
    `-l`, `-0`: `-lne CODE` is -l, -n, -e), and a word ending in one of ``rest`` after them is the value (perl's
    `-d:Trace`, `-0x1F`); ``files``: letters naming the script file (php's `-f`), ``long_files`` likewise;
    ``long_valued``: long options taking a value (`--opt=V` or `--opt V`); ``module``: a letter that names a
    module to run (the rule's subcommands decide); ``stdin``: whether no script means reading one from stdin.
    """

    __slots__ = ("code", "code_long", "valued", "attached", "digits", "files", "long_files", "long_valued",
                 "module", "stdin")

    def __init__(self, code: str, valued: str = "", *, code_long: frozenset[str] = frozenset(), attached: str = "",
                 digits: dict[str, tuple[str, str]] | None = None, files: str = "",
                 long_files: frozenset[str] = frozenset(), long_valued: frozenset[str] = frozenset(),
                 module: str = "", stdin: bool = True) -> None:
        self.code, self.valued, self.code_long, self.attached = code, valued, code_long, attached
        self.digits = digits or {}
        self.files, self.long_files, self.long_valued, self.module, self.stdin = (
            files, long_files, long_valued, module, stdin)


_OCTAL = "01234567"
_NODE_VALUED = frozenset({
    # `node --help`, v20: the options shown with `=...`, which node also takes as the next word (`--title x`).
    "--allow-fs-read", "--allow-fs-write", "--build-snapshot-config", "--conditions", "--cpu-prof-dir",
    "--cpu-prof-interval", "--cpu-prof-name", "--diagnostic-dir", "--disable-proto", "--disable-warning",
    "--dns-result-order", "--env-file", "--env-file-if-exists", "--experimental-default-type",
    "--experimental-loader", "--loader", "--experimental-policy", "--experimental-sea-config", "--heap-prof-dir",
    "--heap-prof-interval", "--heap-prof-name", "--heapsnapshot-near-heap-limit", "--heapsnapshot-signal",
    "--icu-data-dir", "--import", "--input-type", "--inspect-port", "--debug-port", "--inspect-publish-uid",
    "--max-http-header-size", "--network-family-autoselection-attempt-timeout", "--openssl-config",
    "--policy-integrity", "--redirect-warnings", "--report-dir", "--report-filename", "--report-signal", "--require",
    "--secure-heap", "--secure-heap-min", "--snapshot-blob", "--test-concurrency", "--test-name-pattern",
    "--test-reporter", "--test-reporter-destination", "--test-shard", "--test-timeout", "--title",
    "--tls-cipher-list", "--tls-keylog", "--trace-event-categories", "--trace-event-file-pattern",
    "--trace-require-module", "--unhandled-rejections", "--use-largepages", "--v8-pool-size", "--watch-path",
})
_NODE = _Spec("ep", "rC", code_long=frozenset({"--eval", "--print"}), long_valued=_NODE_VALUED)
_SPECS: dict[str, _Spec] = {
    "python": _Spec("c", "WXQ", module="m", long_valued=frozenset({"--check-hash-based-pycs"})),
    # perlrun: -I takes the rest of the word or the next; -i, -M, -m, -x, -C, -F, -V the rest of the word only;
    # -l and -0 an octal number, -D a number, -d a `t`, then the cluster goes on.
    "perl": _Spec("eE", "I", attached="iMmxCFV", digits={"l": (_OCTAL, ""), "0": (_OCTAL, "xX"),
                                                        "D": ("0123456789", ""), "d": ("t", ":=")}),
    # ruby(1): -C, -E, -I, -r take the rest of the word or the next; -F, -i, -x the rest only; -0 and -T a number.
    "ruby": _Spec("e", "IrCE", attached="Fix", digits={"0": (_OCTAL, ""), "T": ("0123456789", ""),
                                                        "W": ("012", ":")}),
    "node": _NODE,
    "nodejs": _NODE,
    "bun": _Spec("e", "r", code_long=frozenset({"--eval", "--print"}), stdin=False),
    "deno": _Spec("", stdin=False),
    # php -h: -f and -F name the script file; -r, -R, -B, -E are code; long forms as php's own getopt reads them.
    "php": _Spec("rRBE", "cdzSt", files="fF",
                 code_long=frozenset({"--run", "--process-code", "--process-begin", "--process-end"}),
                 long_files=frozenset({"--file", "--process-file"}),
                 long_valued=frozenset({"--php-ini", "--define", "--server", "--docroot", "--zend-extension", "--rf",
                                        "--rfunction", "--rc", "--rclass", "--re", "--rextension", "--rz",
                                        "--rzendextension", "--ri", "--rextinfo"})),
    "lua": _Spec("e", "l"),
    "luajit": _Spec("e", "l"),
    "Rscript": _Spec("e"),
    "tclsh": _Spec(""),
}


def _spec_for(name: str) -> _Spec | None:
    if is_python(name):
        return _SPECS["python"]
    return _SPECS.get(name)


def inline_code(name: str, args: list[str]) -> str | None:
    """Why ``name args`` runs code given inline, or None."""
    if name in _AWK:
        if "-f" in args or any(a.startswith("--file") for a in args):
            return None
        return f"`{name}` programs given on the command line can run commands (system, pipes); use grep, cut or sort"
    if name == "sed":
        return _sed(args)
    if name == "deno" and args[:1] == ["eval"]:
        return "`deno eval` runs inline code"
    spec = _spec_for(name)
    if spec is None:
        return None
    if args and args[0] in ("--version", "-V", "--help", "-h"):
        return None
    script = False  # a script file named by an option (`php -f x.php`)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-":
            return f"`{name} -` runs a script read from stdin"
        if a == "--":
            break
        if a.startswith("--"):
            option, eq, _ = a.partition("=")
            if option in spec.code_long:
                return f"`{name} {option}` runs inline code"
            script = script or option in spec.long_files
            valued = option in spec.long_valued or option in spec.long_files
            i += 2 if valued and not eq else 1
            continue
        if a.startswith("-"):
            cluster = a[1:]
            n = 0
            while n < len(cluster):
                ch = cluster[n]
                if ch in spec.code:
                    return f"`{name} -{ch}` runs inline code; write a file in your scope and run that instead, if your rules allow"
                if ch in spec.valued or ch in spec.files:
                    script = script or ch in spec.files
                    i += 0 if n + 1 < len(cluster) else 1  # the rest of the word, or the next word
                    break
                if ch in spec.attached:
                    break  # the rest of the word, and only that
                if ch == spec.module:
                    return None  # python -m MODULE: the rule's subcommands decide
                n += 1
                if ch in spec.digits:
                    chars, rest = spec.digits[ch]
                    while n < len(cluster) and cluster[n] in chars:
                        n += 1
                    if n < len(cluster) and cluster[n] in rest:
                        break  # `-d:Trace`, `-0x1F`: the rest of the word is the value
            i += 1
            continue
        return None  # a script file: the rules decide
    if script:
        return None
    return f"`{name}` with no script reads code from stdin" if spec.stdin else None


# GNU sed's long options (getopt_long accepts any unambiguous prefix) and what they are.
_SED_LONG = {
    "expression": "script", "file": "file", "in-place": "flag", "line-length": "value", "null-data": "flag",
    "zero-terminated": "flag", "quiet": "flag", "silent": "flag", "regexp-extended": "flag", "separate": "flag",
    "unbuffered": "flag", "posix": "flag", "debug": "flag", "sandbox": "flag", "follow-symlinks": "flag",
    "binary": "flag", "help": "flag", "version": "flag",
}
_SED_SHORT_VALUE = {"e": "script", "f": "file", "l": "value"}
_SED_SHORT_FLAGS = set("nErsuzi")


def _sed_options(args: list[str]) -> tuple[list[str], list[str]] | str:
    """(scripts given with -e, other operands), or why the options cannot be read."""
    scripts, operands, i = [], [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands += args[i + 1:]
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            matches = [o for o in _SED_LONG if o.startswith(name)] if name else []
            kind = _SED_LONG[name] if name in _SED_LONG else (_SED_LONG[matches[0]] if len(matches) == 1 else None)
            if kind is None:
                return f"`sed {a}` is not an option the gate can read"
            if kind == "flag" and eq:
                full = name if name in _SED_LONG else matches[0]
                if full == "in-place":
                    return (f"`sed {a}` keeps a backup at FILE{value}, which the gate does not check; use `sed -i` "
                            "with no suffix")
                return f"`sed --{full}` takes no value"
            if kind in ("script", "file", "value") and not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if kind == "script":
                scripts.append(value)
            elif kind == "file":
                return "`sed --file` runs a script file the gate cannot read; give the script on the command line (`sed 's/a/b/' FILE`)"
            i += 1
            continue
        if a.startswith("-") and a != "-":
            cluster = a[1:]
            for n, ch in enumerate(cluster):
                kind = _SED_SHORT_VALUE.get(ch)
                if kind is None:
                    if ch not in _SED_SHORT_FLAGS:
                        return f"`sed -{ch}` is not an option the gate can read"
                    if ch == "i":
                        if cluster[n + 1:]:  # -i[SUFFIX]: the rest of the cluster is a backup suffix
                            return (f"`sed -{cluster[n:]}` keeps a backup at FILE{cluster[n + 1:]}, which the gate does "
                                    "not check; use `sed -i` with no suffix")
                        break
                    continue
                value = cluster[n + 1:]
                if not value:
                    value = args[i + 1] if i + 1 < len(args) else ""
                    i += 1
                if kind == "file":
                    return "`sed -f` runs a script file the gate cannot read; give the script on the command line (`sed 's/a/b/' FILE`)"
                if kind == "script":
                    scripts.append(value)
                break
            i += 1
            continue
        operands.append(a)
        i += 1
    return scripts, operands


def _sed(args: list[str]) -> str | None:
    parsed = _sed_options(args)
    if isinstance(parsed, str):
        return parsed
    scripts, operands = parsed
    if not scripts:
        if not operands:
            return "`sed` needs its script on the command line"
        scripts = [operands[0]]
    for script in scripts:
        for part in script.replace("\n", ";").split(";"):
            if part.strip() and not _sed_safe(part):
                return f"the sed script `{script[:40]}` may write files or run commands; only addresses with p, d, q, = and s///[gip] are allowed"
    return None


_SED_FLAGS = frozenset("gipI0123456789")


def _sed_safe(part: str) -> bool:
    """Is one command of a sed script an address (`N`, `$`, `/re/`, a range of two) with p, d, q, = or
    s/re/text/ and flags g, i, p, I and a count, and nothing else?

    Scanned by hand, once through: the regular expression this replaces backtracked over runs of
    blanks and escapes (a script of 100,000 blanks held the hook for minutes).
    """
    n = len(part)
    i = _sed_address(part, _blanks(part, 0))
    if 0 <= i < n and part[i] == ",":
        j = _sed_address(part, i + 1)
        if j == i + 1:
            return False
        i = j
    if i < 0:
        return False
    i = _blanks(part, i)
    if i < n and part[i] in "pdq=":
        i += 1
    elif i < n and part[i] == "s":
        if i + 1 >= n:
            return False
        delim = part[i + 1]
        if delim.isspace() or delim == "\\" or delim.isalnum() or delim == "_":
            return False
        i += 2
        for _ in range(2):  # the pattern, then the replacement
            while i < n and part[i] != delim:
                if part[i] == "\\":
                    if i + 1 >= n or part[i + 1] == "\n":
                        return False
                    i += 1
                i += 1
            if i >= n:
                return False
            i += 1
        while i < n and part[i] in _SED_FLAGS:
            i += 1
    return _blanks(part, i) == n


def _blanks(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _sed_address(part: str, i: int) -> int:
    """The index after an optional address at ``i`` (``i`` itself when there is none), -1 when malformed."""
    n = len(part)
    if i >= n:
        return i
    if part[i] == "$":
        return i + 1
    if "0" <= part[i] <= "9":
        while i < n and "0" <= part[i] <= "9":
            i += 1
        return i
    if part[i] == "/":
        i += 1
        while i < n and part[i] != "/":
            if part[i] == "\\":
                if i + 1 >= n or part[i + 1] == "\n":
                    return -1
                i += 1
            i += 1
        return i + 1 if i < n else -1
    return i
