#!/usr/bin/env python3
"""The Swift package of a release: packaging/swift as committed, with its Package.swift pointing
the binary target EmqUniffiFFI at the release's EmqUniffiFFI.xcframework.zip by URL and checksum.

    python3 packaging/swift/release-package.py --url URL --checksum HEX [--out DIR]
    python3 packaging/swift/release-package.py --check

The committed Package.swift has the one line

    let releaseFFI: (url: String, checksum: String)? = nil

(nil: local development, the binary target is the folder EmqUniffiFFI.xcframework); this writes a
copy in which that line reads `= (url: "URL", checksum: "HEX")` and nothing else differs, so that
SwiftPM takes `.binaryTarget(name: "EmqUniffiFFI", url:, checksum:)`. URL must be https and name a
.zip; HEX is `swift package compute-checksum`'s output (64 lowercase hex digits). With --out it
writes DIR/emq-swift-<version>/ (Package.swift, README.md, Sources/, Tests/) and
DIR/emq-swift-<version>.zip of that folder, and prints the new line; without, it prints the whole
Package.swift. --check runs it on example values and checks what it writes (scripts/test-packages).
"""

from __future__ import annotations

import argparse
import difflib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LINE = "let releaseFFI: (url: String, checksum: String)? = nil"


def release_manifest(text: str, url: str, checksum: str) -> str:
    if not re.fullmatch(r"https://[^\s\"\\]+\.zip", url):
        raise ValueError(f"not an https URL of a .zip without quotes or spaces: {url!r}")
    if not re.fullmatch(r"[0-9a-f]{64}", checksum):
        raise ValueError(f"not a SwiftPM checksum (64 lowercase hex digits): {checksum!r}")
    lines = text.split("\n")
    at = [i for i, line in enumerate(lines) if line == LINE]
    if len(at) != 1:
        raise ValueError(f"Package.swift has the line {LINE!r} {len(at)} times, not once")
    lines[at[0]] = f'let releaseFFI: (url: String, checksum: String)? = (url: "{url}", checksum: "{checksum}")'
    return "\n".join(lines)


def version() -> str:
    return subprocess.check_output([sys.executable, str(ROOT / "packaging" / "versions")], text=True).strip()


def write_package(out: Path, manifest: str) -> Path:
    v = version()
    pkg = out / f"emq-swift-{v}"
    if pkg.exists():
        shutil.rmtree(pkg)
    pkg.mkdir(parents=True)
    for d in ("Sources", "Tests"):
        shutil.copytree(HERE / d, pkg / d)
    shutil.copy(HERE / "README.md", pkg / "README.md")
    (pkg / "Package.swift").write_text(manifest)
    zpath = out / f"emq-swift-{v}.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(pkg.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(out).as_posix())
    return zpath


def check() -> None:
    text = (HERE / "Package.swift").read_text()
    url = "https://github.com/emq/emq/releases/download/v0.0.0/EmqUniffiFFI.xcframework.zip"
    checksum = "0123456789abcdef" * 4
    new = release_manifest(text, url, checksum)
    diff = [d for d in difflib.unified_diff(text.split("\n"), new.split("\n"), lineterm="", n=0)
            if d.startswith(("+", "-")) and not d.startswith(("+++", "---"))]
    assert diff == [f"-{LINE}",
                    f'+let releaseFFI: (url: String, checksum: String)? = (url: "{url}", checksum: "{checksum}")'], diff
    # The binary target takes releaseFFI's url and checksum; the local path stays as the fallback.
    assert 'binaryTarget(name: "EmqUniffiFFI", url: release.url, checksum: release.checksum)' in new
    assert 'binaryTarget(name: "EmqUniffiFFI", path: "EmqUniffiFFI.xcframework")' in new
    assert 'testTarget(\n            name: "EmqTests"' in new and (HERE / "Tests" / "EmqTests").is_dir()
    for bad_url, bad_sum in [("http://x/a.zip", checksum), ('https://x/a".zip', checksum),
                             ("https://x/a.tar.gz", checksum), (url, checksum.upper()), (url, "abc")]:
        try:
            release_manifest(text, bad_url, bad_sum)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad_url!r} {bad_sum!r}")
    try:
        release_manifest(new, url, checksum)
        raise AssertionError("rewrote a Package.swift already rewritten")
    except ValueError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        z = write_package(Path(tmp), new)
        names = set(zipfile.ZipFile(z).namelist())
        top = z.name[: -len(".zip")]
        for f in ("Package.swift", "README.md", "Sources/EmqUniffi/EmqUniffi.swift",
                  "Sources/EmqUniffiFFI/module.modulemap", "Tests/EmqTests/QueueTests.swift"):
            assert f"{top}/{f}" in names, f"{z.name} lacks {top}/{f}"
        assert zipfile.ZipFile(z).read(f"{top}/Package.swift").decode() == new
    print(f"release-package: ok: the release's Package.swift differs from the committed one in the one "
          f"releaseFFI line (url, checksum); {top}.zip holds Package.swift, README.md, Sources/, Tests/")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url")
    ap.add_argument("--checksum")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.check:
        check()
        return
    if not a.url or not a.checksum:
        ap.error("--url and --checksum are needed (or --check)")
    try:
        new = release_manifest((HERE / "Package.swift").read_text(), a.url, a.checksum.strip())
    except ValueError as e:
        sys.exit(f"release-package: {e}")
    if a.out is None:
        sys.stdout.write(new)
        return
    z = write_package(a.out, new)
    print(next(line for line in new.split("\n") if line.startswith("let releaseFFI")))
    print(f"release-package: wrote {z}")


if __name__ == "__main__":
    main()
