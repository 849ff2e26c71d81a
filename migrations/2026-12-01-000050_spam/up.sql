-- Why a submission was stored as spam (honeypot, fill time, captcha); NULL when it is not.
ALTER TABLE submissions ADD COLUMN spam_reason TEXT;
