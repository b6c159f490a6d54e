-- Demo accounts and loans, loaded with sql/demo.sql into a new, empty database only.
-- The passwords are in docs/operations.md (Accounts) and are for the demo only: the hashes below
-- are public, so anyone can log in with them. Ids in order: bibliothek is 1, mmuster 2 …
-- Hashes made with lib/auth/password.ts (scrypt, N=2^17, r=8, p=1).

INSERT INTO account (username, password_hash, role, person_username) VALUES
  -- password: bibliothek-demo
  ('bibliothek', 'scrypt$N=131072,r=8,p=1$QyBbFxn8kVmwdjgonr3yUA$9h6xNcylFpKojuYKhqPawGtf2VDDjgTj3XIs4bgVFxg8_SM3Q9-BMgsWV-NsOYy0OM80gybiAw5Cojnqs8eSAw', 'librarian', NULL),
  -- password: mmuster-demo
  ('mmuster', 'scrypt$N=131072,r=8,p=1$bjAWndcGshspJs9IHmDJCw$TeCrDqf6h7lBN5IIpkyQ2g5ObvdtfylwEfztD81wdi7pTbmrTr4r2KNzIe9Mj510B1wp8abAfBRN6gKpsy-Pgw', 'user', 'mmuster'),
  -- password: jmueller-demo
  ('jmueller', 'scrypt$N=131072,r=8,p=1$HbXGXlIqLLPoA7o7rSnHbw$Yl6GzOWEi93zGZCrXk-oVreQwX9eQmOnrorfGDmVxAH7sxcqGGk-CDHutU6K365if8VS5MWbo1I5CGZXeHTreg', 'user', 'jmueller'),
  -- password: aschaefer-demo
  ('aschaefer', 'scrypt$N=131072,r=8,p=1$7xQ-96VBL_oq-63MGzq69w$MKeyyeIXMrv4L-pQk6KOuOHx1-2QAF5vzj6FhrGFhTfxFBafDibRS5dIQYOoa8VFn40-zNpnuCxNQRJpgLQKfA', 'user', 'aschaefer')
-- An account made with bin/accounts.ts before the first start keeps its name and password.
ON CONFLICT DO NOTHING;

-- Dates relative to the day the demo is loaded, so one loan is always overdue and the others not.
INSERT INTO loan (account_id, werk_id, since, until, returned_at)
SELECT a.id, w.id, current_date + v.since_days, current_date + v.until_days, v.returned_at
FROM (VALUES
  ('mmuster', 'Über "das" Meer', -20, 8, NULL::timestamptz),
  ('mmuster', 'Das Haus am Deich', -40, -12, NULL),
  ('jmueller', 'Stillleben mit Zitronen', -5, 23, NULL),
  -- returned: not on the loan list any more
  ('jmueller', 'Liegende', -90, -62, now() - interval '70 days')
) AS v(username, titel, since_days, until_days, returned_at)
JOIN account a ON a.username = v.username
JOIN werk w ON w.titel = v.titel
ON CONFLICT DO NOTHING;
