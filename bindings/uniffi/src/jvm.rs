//! Permanent JVM attachment of the binding's runtime threads.
//!
//! This module owns one thing: when the library runs inside a JVM (the Kotlin binding, loaded by
//! JNA), every thread of the binding's tokio runtime is attached to the JVM once, as a daemon, when
//! the runtime starts it ([`attach_current_thread`], the runtime's `on_thread_start`), and detached
//! when the runtime stops it ([`detach_current_thread`], `on_thread_stop`).
//!
//! Why: those threads call into the JVM through JNA callbacks — the foreign `JobHandler`'s vtable
//! once per job, and the continuation of every async call (`add`, `get`, …) when its result is
//! ready. JNA attaches a native thread that is not attached for the duration of one callback and
//! detaches it afterwards, so every callback would pay an attach and a detach (a new
//! `java.lang.Thread` each time). JNA leaves alone the threads it did not attach itself, so with the
//! threads attached here a callback costs only the call.
//!
//! Daemon, so that the runtime's threads (which live as long as the process) never keep the JVM
//! from exiting. Without a JVM (plain Rust, Swift) there is nothing to do: `JNI_GetCreatedJavaVMs`
//! is looked up in the process with `dlsym` and is absent, and both functions return at once. Only
//! the few JNI declarations needed are written out here (the layout of `jni.h`'s
//! `JNIInvokeInterface_`), rather than depending on a JNI crate.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::ptr;
use std::sync::OnceLock;

type JInt = i32;

const JNI_OK: JInt = 0;
const JNI_EDETACHED: JInt = -2;
const JNI_VERSION_1_6: JInt = 0x0001_0006;

/// `jni.h`'s `JNIInvokeInterface_`: the function table a `JavaVM` points to, in declaration order.
#[repr(C)]
struct JniInvokeInterface {
    _reserved0: *mut c_void,
    _reserved1: *mut c_void,
    _reserved2: *mut c_void,
    _destroy_java_vm: unsafe extern "system" fn(*mut JavaVm) -> JInt,
    _attach_current_thread:
        unsafe extern "system" fn(*mut JavaVm, *mut *mut c_void, *mut c_void) -> JInt,
    detach_current_thread: unsafe extern "system" fn(*mut JavaVm) -> JInt,
    get_env: unsafe extern "system" fn(*mut JavaVm, *mut *mut c_void, JInt) -> JInt,
    attach_current_thread_as_daemon:
        unsafe extern "system" fn(*mut JavaVm, *mut *mut c_void, *mut c_void) -> JInt,
}

/// `jni.h`'s `JavaVM` (in C, `const struct JNIInvokeInterface_ *`); a VM is a `*mut JavaVm`.
type JavaVm = *const JniInvokeInterface;

/// `jni.h`'s `JavaVMAttachArgs`.
#[repr(C)]
struct JavaVmAttachArgs {
    version: JInt,
    name: *mut c_char,
    group: *mut c_void,
}

/// `jint JNI_GetCreatedJavaVMs(JavaVM **vmBuf, jsize bufLen, jsize *nVMs)`.
type GetCreatedJavaVms = unsafe extern "system" fn(*mut *mut JavaVm, JInt, *mut JInt) -> JInt;

thread_local! {
    /// Whether this module attached the current thread (and so must detach it).
    static ATTACHED: Cell<bool> = const { Cell::new(false) };
}

/// The JVM this process runs, if any. Found once and kept (a process has at most one JVM, and it
/// outlives the library's threads); not kept when absent, so a JVM created later is still found.
fn java_vm() -> Option<*mut JavaVm> {
    static VM: OnceLock<usize> = OnceLock::new();
    if let Some(&vm) = VM.get() {
        return Some(vm as *mut JavaVm);
    }
    let name = c"JNI_GetCreatedJavaVMs";
    // SAFETY: dlsym/dlopen with valid NUL-terminated names. `java` loads libjvm.so RTLD_GLOBAL, so
    // RTLD_DEFAULT finds it; a host that loaded it RTLD_LOCAL is found by its soname (RTLD_NOLOAD:
    // never loads a JVM into a process that has none).
    let mut sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if sym.is_null() {
        let lib =
            unsafe { libc::dlopen(c"libjvm.so".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if lib.is_null() {
            return None;
        }
        sym = unsafe { libc::dlsym(lib, name.as_ptr()) };
        // The JVM stays loaded: NOLOAD only added a reference, given back here.
        unsafe { libc::dlclose(lib) };
        if sym.is_null() {
            return None;
        }
    }
    // SAFETY: the symbol is the JNI invocation API's `JNI_GetCreatedJavaVMs`.
    let get_created: GetCreatedJavaVms = unsafe { std::mem::transmute(sym) };
    let mut vm: *mut JavaVm = ptr::null_mut();
    let mut count: JInt = 0;
    if unsafe { get_created(&mut vm, 1, &mut count) } != JNI_OK || count < 1 || vm.is_null() {
        return None;
    }
    Some(*VM.get_or_init(|| vm as usize) as *mut JavaVm)
}

/// True when this process runs a JVM (the binding is used from Kotlin or Java).
pub(crate) fn in_jvm() -> bool {
    java_vm().is_some()
}

/// Attaches the current thread to the JVM as a daemon, named like the thread (`emq-uniffi`), if
/// the process runs a JVM and the thread is not attached yet. The runtime's `on_thread_start`.
pub(crate) fn attach_current_thread() {
    let Some(vm) = java_vm() else { return };
    let name = std::thread::current()
        .name()
        .and_then(|n| CString::new(n).ok())
        .unwrap_or_else(|| c"emq-uniffi".to_owned());
    // SAFETY: `vm` is a live JavaVM (the JVM outlives the threads of a library it loaded); the
    // invoke interface is called as jni.h declares it; the JVM copies the name during the call.
    unsafe {
        let iface = &**vm;
        let mut env: *mut c_void = ptr::null_mut();
        if (iface.get_env)(vm, &mut env, JNI_VERSION_1_6) != JNI_EDETACHED {
            return; // attached already (by someone else: leave it to them), or no usable VM
        }
        let mut args = JavaVmAttachArgs {
            version: JNI_VERSION_1_6,
            name: name.as_ptr() as *mut c_char,
            group: ptr::null_mut(),
        };
        let status = (iface.attach_current_thread_as_daemon)(
            vm,
            &mut env,
            &mut args as *mut JavaVmAttachArgs as *mut c_void,
        );
        if status == JNI_OK {
            ATTACHED.with(|a| a.set(true));
        }
    }
}

/// Detaches the current thread from the JVM if [`attach_current_thread`] attached it. The
/// runtime's `on_thread_stop` (its blocking threads stop when idle; its workers with the runtime).
pub(crate) fn detach_current_thread() {
    if !ATTACHED.with(|a| a.replace(false)) {
        return;
    }
    if let Some(vm) = java_vm() {
        // SAFETY: this thread was attached by `attach_current_thread` and is not inside a JNI call.
        unsafe { ((**vm).detach_current_thread)(vm) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_jvm_attach_and_detach_do_nothing() {
        assert!(java_vm().is_none(), "no JVM in a plain Rust test");
        std::thread::spawn(|| {
            attach_current_thread();
            assert!(!ATTACHED.with(|a| a.get()));
            detach_current_thread();
        })
        .join()
        .unwrap();
    }
}
