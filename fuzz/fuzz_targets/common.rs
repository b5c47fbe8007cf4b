/// Every refusal is a typed error whose code is one of the stable codes.
pub fn typed(e: &emq::Error) {
    let code = e.code();
    assert_eq!(emq::ErrorCode::parse(code.as_str()), Some(code), "{e}");
    assert!(!e.message().is_empty());
}
