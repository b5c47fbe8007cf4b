-- version_check: record the keyspace wire version on first connect; return the stored one.
-- KEYS[1] version   {emq}:version, STRING
-- ARGV[1] wire      the wire version this client speaks
call('SET', K.version, ARGV[1], 'NX')
return call('GET', K.version)
