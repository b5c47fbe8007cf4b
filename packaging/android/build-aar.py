#!/usr/bin/env python3
"""Assembles the Android library of emq, dev.emq:emq-android:<version> (an AAR and its POM), from
a folder of per-ABI native libraries and the compiled Kotlin classes:

    python3 packaging/android/build-aar.py --jni DIR --classes JAR [--out DIR] [--stand-in]

  DIR/<abi>/libemq_uniffi.so for each of arm64-v8a, armeabi-v7a, x86_64 and x86 (what
      `cargo ndk -t arm64-v8a -t armeabi-v7a -t x86_64 -t x86 -o DIR build -p emq-uniffi` writes);
  JAR: the classes of the uniffi-generated Kotlin (bindings/uniffi/generate.sh) and the
      hand-written layer (bindings/uniffi/kotlin/src/main/kotlin), e.g. the JAR that
      packaging/kotlin/pom.xml builds; only its classes and META-INF/*.kotlin_module go into the
      AAR's classes.jar (a desktop library JNA would look for in it stays out).

It writes OUT/emq-android-<version>.aar:

    AndroidManifest.xml            package dev.emq, minSdk 21, INTERNET
    classes.jar
    jni/<abi>/libemq_uniffi.so     (Android Gradle packs them into the APK's lib/<abi>/)
    R.txt                          (empty: no resources)
    proguard.txt                   (consumer rules: keep JNA and dev.emq, which JNA reaches by reflection)

and OUT/emq-android-<version>.pom, whose dependencies carry JNA as `net.java.dev.jna:jna` of type
`aar` (JNA's Android build: libjnidispatch.so for every ABI, which the JAR lacks), Kotlin's
standard library and kotlinx-coroutines-core, at the versions packaging/kotlin/pom.xml pins.

Each library is checked to be an ELF shared object of its ABI's machine; --stand-in relaxes that
(the check in scripts/test-packages puts this machine's Linux library in every ABI's place: it
exercises the assembly, not the cross build, which only the release workflow's android job runs).
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# ABI -> ELF e_machine (EM_AARCH64, EM_ARM, EM_X86_64, EM_386) and ELF class (2: 64-bit, 1: 32-bit).
ABIS = {
    "arm64-v8a": (183, 2),
    "armeabi-v7a": (40, 1),
    "x86_64": (62, 2),
    "x86": (3, 1),
}
LIB = "libemq_uniffi.so"
GROUP, ARTIFACT = "dev.emq", "emq-android"
MIN_SDK = 21

MANIFEST = f"""<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="dev.emq">
    <uses-sdk android:minSdkVersion="{MIN_SDK}" />
    <uses-permission android:name="android.permission.INTERNET" />
</manifest>
"""

# JNA finds the library's functions and structures by reflection (uniffi's documented rules).
PROGUARD = """# emq: JNA and the uniffi-generated bindings are reached by reflection.
-dontwarn java.awt.*
-keep class com.sun.jna.** { *; }
-keep class * implements com.sun.jna.** { *; }
-keep class dev.emq.** { *; }
"""


def pom_versions() -> dict[str, str]:
    text = (ROOT / "packaging" / "kotlin" / "pom.xml").read_text()
    out = {}
    for name in ("kotlin.version", "coroutines.version", "jna.version"):
        m = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", text)
        if not m:
            sys.exit(f"build-aar: packaging/kotlin/pom.xml has no <{name}>")
        out[name] = m.group(1).strip()
    return out


def pom(version: str, v: dict[str, str]) -> str:
    def dep(group: str, artifact: str, ver: str, typ: str | None = None) -> str:
        t = f"\n      <type>{typ}</type>" if typ else ""
        return (f"    <dependency>\n      <groupId>{group}</groupId>\n      <artifactId>{artifact}</artifactId>\n"
                f"      <version>{ver}</version>{t}\n      <scope>compile</scope>\n    </dependency>\n")

    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        f"  <groupId>{GROUP}</groupId>\n  <artifactId>{ARTIFACT}</artifactId>\n  <version>{version}</version>\n"
        "  <packaging>aar</packaging>\n"
        "  <name>emq for Android</name>\n"
        "  <description>EchoMQ 2.0 for Android: the uniffi Kotlin bindings of the Rust core, "
        "libemq_uniffi.so for arm64-v8a, armeabi-v7a, x86_64 and x86</description>\n"
        "  <dependencies>\n"
        + dep("net.java.dev.jna", "jna", v["jna.version"], "aar")
        + dep("org.jetbrains.kotlin", "kotlin-stdlib", v["kotlin.version"])
        + dep("org.jetbrains.kotlinx", "kotlinx-coroutines-core", v["coroutines.version"])
        + "  </dependencies>\n</project>\n"
    )


def check_elf(path: Path, abi: str, stand_in: bool) -> None:
    head = path.read_bytes()[:20]
    if head[:4] != b"\x7fELF":
        sys.exit(f"build-aar: {path} is not an ELF file")
    if head[16] != 3:  # e_type ET_DYN (little-endian on every Android ABI)
        sys.exit(f"build-aar: {path} is not a shared object")
    machine, elf_class = ABIS[abi]
    got = int.from_bytes(head[18:20], "little")
    if not stand_in and (got != machine or head[4] != elf_class):
        sys.exit(f"build-aar: {path} is ELF machine {got} class {head[4]}, not {abi}'s ({machine}, class {elf_class})")


def classes_jar(src: Path) -> bytes:
    buf = io.BytesIO()
    kept = 0
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            n = info.filename
            if n.endswith(".class") or (n.startswith("META-INF/") and n.endswith(".kotlin_module")):
                zout.writestr(n, zin.read(n))
                kept += n.endswith(".class")
    if kept == 0:
        sys.exit(f"build-aar: {src} has no classes")
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jni", required=True, type=Path, help="folder of <abi>/libemq_uniffi.so")
    ap.add_argument("--classes", required=True, type=Path, help="JAR of the compiled Kotlin")
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "android")
    ap.add_argument("--version", help="default: the workspace's (packaging/versions)")
    ap.add_argument("--stand-in", action="store_true", help="accept any ELF shared object for every ABI")
    a = ap.parse_args()
    version = a.version or subprocess.check_output(
        [sys.executable, str(ROOT / "packaging" / "versions")], text=True).strip()
    libs = {}
    for abi in ABIS:
        p = a.jni / abi / LIB
        if not p.is_file():
            sys.exit(f"build-aar: missing {p}")
        check_elf(p, abi, a.stand_in)
        libs[abi] = p
    a.out.mkdir(parents=True, exist_ok=True)
    aar = a.out / f"{ARTIFACT}-{version}.aar"
    with zipfile.ZipFile(aar, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("AndroidManifest.xml", MANIFEST)
        z.writestr("classes.jar", classes_jar(a.classes))
        for abi, p in libs.items():
            z.write(p, f"jni/{abi}/{LIB}")
        z.writestr("R.txt", "")
        z.writestr("proguard.txt", PROGUARD)
    (a.out / f"{ARTIFACT}-{version}.pom").write_text(pom(version, pom_versions()))
    print(f"build-aar: wrote {aar} and {ARTIFACT}-{version}.pom ({', '.join(ABIS)})")


if __name__ == "__main__":
    main()
