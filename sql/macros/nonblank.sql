-- nonblank(text): text when it holds a character other than white space, else null. A request id given as "" or
-- "  " is no id: taken as one, every later blank id was quarantined as its duplicate (a break test: billed requests
-- left the totals), so the record's next id (the body's, then one minted from its file and line) is used instead.
create or replace macro nonblank(s) as case when trim(s, e' \t\r\n') <> '' then s end;
