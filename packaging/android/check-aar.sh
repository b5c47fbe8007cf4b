#!/usr/bin/env bash
# A quick check (seconds) of the AAR's assembly on a machine without the Android NDK: puts this
# machine's libemq_uniffi.so in the place of every ABI's (a stand-in: the cross build by cargo-ndk
# runs only in the release workflow's android job), runs packaging/android/build-aar.py with the
# Kotlin classes of JAR, and checks the archive it writes, read back on its own:
#   - exactly AndroidManifest.xml, classes.jar, R.txt, proguard.txt and
#     jni/{arm64-v8a,armeabi-v7a,x86_64,x86}/libemq_uniffi.so, each library the given one byte
#     for byte;
#   - the manifest names package dev.emq; classes.jar holds dev/emq/Queue.class and the
#     uniffi-generated dev/emq/*, and no native library;
#   - the POM is dev.emq:emq-android:<workspace version>, packaging aar, and depends on
#     net.java.dev.jna:jna of type aar (JNA's Android build) at packaging/kotlin/pom.xml's version.
#   bash packaging/android/check-aar.sh LIB JAR
# LIB: e.g. target/debug/libemq_uniffi.so (cargo build -p emq-uniffi); JAR: the Kotlin JAR
# (packaging/kotlin/pom.xml; scripts/test-packages passes the one it just built).
set -euo pipefail
cd "$(dirname "$0")/../.."
lib="${1:?usage: check-aar.sh LIB JAR}"
jar="${2:?usage: check-aar.sh LIB JAR}"
[[ -f "$lib" ]] || { echo "check-aar: missing $lib (cargo build -p emq-uniffi)" >&2; exit 1; }
[[ -f "$jar" ]] || { echo "check-aar: missing $jar (mvn -f packaging/kotlin/pom.xml package)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for abi in arm64-v8a armeabi-v7a x86_64 x86; do
    mkdir -p "$work/jni/$abi"
    ln -s "$(realpath "$lib")" "$work/jni/$abi/libemq_uniffi.so"
done
python3 packaging/android/build-aar.py --jni "$work/jni" --classes "$jar" --out "$work/out" --stand-in
version="$(python3 packaging/versions)"
python3 - "$work/out/emq-android-$version.aar" "$work/out/emq-android-$version.pom" "$lib" <<'PY'
import re, sys, zipfile, io
import xml.etree.ElementTree as ET
aar, pom, lib = sys.argv[1:4]
abis = ["arm64-v8a", "armeabi-v7a", "x86_64", "x86"]
want = {"AndroidManifest.xml", "classes.jar", "R.txt", "proguard.txt"} | {f"jni/{a}/libemq_uniffi.so" for a in abis}
z = zipfile.ZipFile(aar)
names = set(z.namelist())
assert names == want, f"the AAR holds {sorted(names)}, not {sorted(want)}"
so = open(lib, "rb").read()
for a in abis:
    assert z.read(f"jni/{a}/libemq_uniffi.so") == so, f"jni/{a}/libemq_uniffi.so is not {lib}"
manifest = ET.fromstring(z.read("AndroidManifest.xml"))
assert manifest.tag == "manifest" and manifest.get("package") == "dev.emq", "AndroidManifest.xml: package is not dev.emq"
cls = zipfile.ZipFile(io.BytesIO(z.read("classes.jar"))).namelist()
for c in ["dev/emq/Queue.class", "dev/emq/Emq_uniffiKt.class"]:
    assert c in cls, f"classes.jar lacks {c}"
bad = [n for n in cls if not (n.endswith(".class") or n.endswith(".kotlin_module"))]
assert not bad, f"classes.jar holds more than classes: {bad[:5]}"
assert "keep class com.sun.jna" in z.read("proguard.txt").decode(), "proguard.txt does not keep JNA"
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
p = ET.parse(pom).getroot()
g = lambda e, t: e.find(f"m:{t}", ns).text
version = re.search(r"emq-android-(.+)\.pom$", pom).group(1)
assert (g(p, "groupId"), g(p, "artifactId"), g(p, "version"), g(p, "packaging")) == ("dev.emq", "emq-android", version, "aar")
deps = {(g(d, "groupId"), g(d, "artifactId")): d for d in p.find("m:dependencies", ns)}
jna = deps.get(("net.java.dev.jna", "jna"))
assert jna is not None and jna.find("m:type", ns) is not None and g(jna, "type") == "aar", "the POM does not depend on jna@aar"
kpom = open("packaging/kotlin/pom.xml").read()
assert g(jna, "version") == re.search(r"<jna.version>([^<]+)<", kpom).group(1), "jna's version differs from packaging/kotlin/pom.xml's"
for k in [("org.jetbrains.kotlin", "kotlin-stdlib"), ("org.jetbrains.kotlinx", "kotlinx-coroutines-core")]:
    assert k in deps, f"the POM lacks {k}"
print(f"check-aar: emq-android-{version}.aar: {len(names)} entries (manifest, classes.jar of {len(cls)} entries, "
      f"jni/<abi>/libemq_uniffi.so for {', '.join(abis)}, R.txt, proguard.txt); the POM depends on "
      f"net.java.dev.jna:jna:{g(jna, 'version')}@aar, kotlin-stdlib, kotlinx-coroutines-core")
PY
echo "check-aar: ok (the layout, with $lib standing in for every ABI: the cross build is the release workflow's)"
