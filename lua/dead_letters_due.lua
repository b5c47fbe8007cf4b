-- dead_letters_due: select the failed jobs whose dead-letter move has waited at least `age_ms`
-- (server time) since their failure, for the maintenance loop to finish (core/src/dead_letter.rs):
-- the worker that failed them moves them at once, so these are the moves a crash interrupted.
-- KEYS[1] dead_letters ZSET failed jobs on their way to their dead-letter queue, by failure time
-- ARGV[1] age_ms       how long a move has waited at least
-- ARGV[2] limit        most ids returned
-- Returns the ids, oldest first.
return call('ZRANGEBYSCORE', K.dead_letters, '-inf', now_ms() - tonumber(ARGV[1]), 'LIMIT', 0,
  tonumber(ARGV[2]))
