# onceform's visitor-facing texts, English (the reference: every other locale has every key here).
# Placeables are filled by the code: $label (a field's label), $form (the form's title), …

## Pages

index-title = Forms
form-errors = Please correct the fields marked below. Nothing was sent yet.
form-required = required
form-choose = Choose…
form-honeypot = Leave this field empty
form-send = Send
captcha-checking = Checking that you are a person…
receipt-title = Thank you
receipt-received = Your message to “{ $form }” was received.
receipt-reference = Your reference:
receipt-once = Sending the form again, or reloading this page, will not send it twice.
receipt-new = Send a new inquiry
page-back = Back to the form
not-found-title = Not found
not-found-body = There is no such form or receipt here.
conflict-title = This form was already sent with different content
conflict-body = We kept what you sent first and set this version aside for our team to review. To send a new inquiry, please use a fresh form.
conflict-link = Open a fresh form
in-progress-title = Your message is still on its way
in-progress-body = The first copy you sent is still being processed. Please wait a moment and send again; it will not be sent twice.
expired-title = This form has expired
expired-body = This form was opened too long ago, so nothing was stored. Please open a fresh form and send again.
rate-limited-title = Too many messages
rate-limited-body = Too many messages were sent from here just now. Please wait { $seconds } seconds and send again.
unavailable-title = The service is briefly unavailable
unavailable-body = Nothing was lost. Please send again in a few seconds; your message will be accepted only once.
forbidden-title = This site may not send this form
forbidden-body = This form cannot be sent from the page you used. Please use the form on our own site.
too-large-title = The message is too long
too-large-body = What you sent is larger than this form accepts. Please shorten it and send again.
timeout-title = The message did not arrive in time
timeout-body = The connection was too slow to send the form. Please send again.
bad-request-title = The form could not be read
bad-request-body = Please open the form again and send it from its page.
failed-title = The form could not be sent
failed-body = Something went wrong on our side and nothing was stored. Please try again later.

## Field messages (422): each names the field by its label

field-required = { $label } is required
field-invalid-email = { $label } is not a valid email address
field-invalid-phone = { $label } is not a valid phone number
field-too-long = { $label } must be at most { $max } characters
field-not-an-option = { $label } must be one of: { $options }
field-unknown = { $label } is not a field of this form
field-given-twice = { $label } was given more than once
field-control-characters = { $label } contains control characters
field-invisible-characters = { $label } contains invisible characters (bidirectional overrides or zero-width spaces)
field-invalid-journey = { $label } must be 1 to 128 characters of A-Z a-z 0-9 _ - . :
field-not-a-boolean = { $label } must be ticked or not
field-consent-required = Please agree to { $label }
field-not-a-number = { $label } must be a number
field-below-minimum = { $label } must be at least { $limit }
field-above-maximum = { $label } must be at most { $limit }
field-off-step = { $label } must be in steps of { $limit }
field-invalid-date = { $label } must be a date (YYYY-MM-DD)
field-too-early = { $label } must be on or after { $limit }
field-too-late = { $label } must be on or before { $limit }
field-invalid-url = { $label } must be a web address starting with http:// or https://
field-too-many-fields = { $label } is one field too many (this form keeps at most { $max })
field-invalid-file-type = { $label } must be a file of type { $options }
field-file-too-large = { $label } must be a file of at most { $limit }
field-too-many-files = { $label } takes at most { $max } files
field-unknown-upload = { $label } names an upload this form does not have (or one that expired): upload the file again
list-separator = {", "}

## Emails

email-greeting = Hello { $name },
email-greeting-anonymous = Hello,
email-confirmation-subject = We received your message
email-subject-reference = { $subject } ({ $reference })
email-confirmation-intro = thank you for contacting us through “{ $form }”. We received your message on { $date } and will get back to you soon.
email-reference = Your reference:
email-echo = What you sent us:
email-automatic = This is an automatic confirmation; you need not reply.
email-owner-subject = New inquiry: { $form }
email-owner-intro = A new inquiry arrived through “{ $form }” on { $date }.
email-owner-reference = Reference:
email-owner-reply = Reply to this email to answer the visitor.
email-file-attached = attached
email-file-download = download: { $path }
email-file-gone = no longer stored

## Chat messages (teams, discord, telegram, line, wecom, dingtalk, feishu): to the form's owners, in the form's locale

chat-title = New inquiry: { $form }
chat-reference = Reference: { $reference }
chat-route = Route: { $route }
chat-field = { $label }: { $value }
chat-open = Open in the admin

## Dates: $weekday and $month-name are the messages below; $time is HH:MM, $zone e.g. UTC+8

date-time = { $weekday }, { $day } { $month-name } { $year }, { $time } ({ $zone })
weekday = { $n ->
    [1] Monday
    [2] Tuesday
    [3] Wednesday
    [4] Thursday
    [5] Friday
    [6] Saturday
   *[0] Sunday
}
month-name = { $n ->
    [1] January
    [2] February
    [3] March
    [4] April
    [5] May
    [6] June
    [7] July
    [8] August
    [9] September
    [10] October
    [11] November
   *[12] December
}

## embed.js (a static site's form); { $seconds } is filled in by the script

embed-checking = Checking that you are a person…
embed-sending = Sending…
embed-errors = Please correct the fields marked below. Nothing was sent yet.
embed-thanks = Thank you, your message was received.
embed-reference = Your reference:
embed-unreachable = We could not reach the server (or this website may not send this form). What you typed is kept: please press Send again.
embed-retrying = Connection problem; trying again…
embed-conflict = This form was already sent with different content. We kept what you sent first; press Send again to send this version as a new message.
embed-rate-limited = Too many messages from here just now. Please wait { $seconds } seconds and press Send again.
embed-unavailable = The service is briefly unavailable. Nothing was lost: please press Send again in { $seconds } seconds.
embed-forbidden = This website is not allowed to send this form.
embed-failed = The message could not be sent.
embed-file-too-large = This file is too large: please choose a smaller one. Nothing was sent yet.
