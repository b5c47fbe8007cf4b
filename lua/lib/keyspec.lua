local EMQ_KEYSPEC = {}
