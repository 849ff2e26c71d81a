# onceform の訪問者向けテキスト：日本語。

## Pages

index-title = フォーム
form-errors = 下記の項目を修正してください。まだ何も送信されていません。
form-required = 必須
form-choose = 選択してください…
form-honeypot = この欄は空のままにしてください
form-send = 送信
captcha-checking = ロボットでないことを確認しています…
receipt-title = ありがとうございました
receipt-received = 「{ $form }」へのメッセージを受け付けました。
receipt-reference = 受付番号：
receipt-once = フォームをもう一度送信したり、このページを再読み込みしたりしても、二重に送信されることはありません。
receipt-new = 新しくお問い合わせする
page-back = フォームに戻る
not-found-title = ページが見つかりません
not-found-body = 該当するフォームまたは受付票はありません。
conflict-title = このフォームは別の内容ですでに送信されています
conflict-body = 最初に送信された内容を保持し、今回の内容は担当者が確認できるよう別に保管しました。新しくお問い合わせする場合は、新しいフォームをご利用ください。
conflict-link = 新しいフォームを開く
in-progress-title = メッセージはまだ処理中です
in-progress-body = 最初に送信された内容をまだ処理しています。しばらくしてからもう一度送信してください。二重に送信されることはありません。
expired-title = このフォームは有効期限が切れています
expired-body = フォームを開いてから時間が経ちすぎたため、何も保存されていません。新しいフォームを開いて、もう一度送信してください。
rate-limited-title = 送信回数が多すぎます
rate-limited-body = 短時間に多くのメッセージが送信されました。{ $seconds } 秒ほど待ってから、もう一度送信してください。
unavailable-title = ただいまサービスを一時的にご利用いただけません
unavailable-body = 入力内容は失われていません。数秒後にもう一度送信してください。同じメッセージが受け付けられるのは一度だけです。
forbidden-title = このサイトからはこのフォームを送信できません
forbidden-body = ご利用のページからはこのフォームを送信できません。当社サイトのフォームをご利用ください。
too-large-title = メッセージが長すぎます
too-large-body = 送信内容がこのフォームで受け付けられる大きさを超えています。短くしてから、もう一度送信してください。
timeout-title = メッセージが時間内に届きませんでした
timeout-body = 通信が遅いため、フォームを送信できませんでした。もう一度送信してください。
bad-request-title = フォームを読み取れませんでした
bad-request-body = フォームを開き直して、フォームのページから送信してください。
failed-title = フォームを送信できませんでした
failed-body = 当社側で問題が発生したため、何も保存されていません。しばらくしてから、もう一度お試しください。

## Field messages (422)

field-required = 「{ $label }」を入力してください
field-invalid-email = 「{ $label }」には正しいメールアドレスを入力してください
field-invalid-phone = 「{ $label }」には正しい電話番号を入力してください
field-too-long = 「{ $label }」は { $max } 文字以内で入力してください
field-not-an-option = 「{ $label }」は次の中から選んでください：{ $options }
field-unknown = 「{ $label }」はこのフォームの項目ではありません
field-given-twice = 「{ $label }」が二回以上送信されました
field-control-characters = 「{ $label }」に制御文字が含まれています
field-invisible-characters = 「{ $label }」に目に見えない文字（双方向制御文字やゼロ幅スペース）が含まれています
field-invalid-journey = 「{ $label }」は A-Z a-z 0-9 _ - . : のみの 1～128 文字で指定してください
field-not-a-boolean = 「{ $label }」はチェックするか、しないかで答えてください
field-consent-required = 「{ $label }」に同意してください
field-not-a-number = 「{ $label }」は数値で入力してください
field-below-minimum = 「{ $label }」は { $limit } 以上にしてください
field-above-maximum = 「{ $label }」は { $limit } 以下にしてください
field-off-step = 「{ $label }」は { $limit } 刻みで入力してください
field-invalid-date = 「{ $label }」は日付（YYYY-MM-DD）で入力してください
field-too-early = 「{ $label }」は { $limit } 以降にしてください
field-too-late = 「{ $label }」は { $limit } 以前にしてください
field-invalid-url = 「{ $label }」は http:// または https:// で始まる URL を入力してください
field-too-many-fields = 「{ $label }」はこのフォームが保存できる項目数（最大 { $max }）を超えています
field-invalid-file-type = 「{ $label }」のファイル形式は次のいずれかにしてください：{ $options }
field-file-too-large = 「{ $label }」のファイルは { $limit } 以下にしてください
field-too-many-files = 「{ $label }」に添付できるファイルは最大 { $max } 個です
field-unknown-upload = 「{ $label }」のアップロードが見つからないか期限切れです。もう一度アップロードしてください
list-separator = 、

## Emails

email-greeting = { $name } 様
email-greeting-anonymous = お客様
email-confirmation-subject = お問い合わせを受け付けました
email-subject-reference = { $subject }（{ $reference }）
email-confirmation-intro = 「{ $form }」からお問い合わせいただき、ありがとうございます。{ $date }にメッセージを受け付けました。担当者より追ってご連絡いたします。
email-reference = 受付番号：
email-echo = 送信内容：
email-automatic = このメールは自動送信されています。ご返信いただく必要はありません。
email-owner-subject = 新しいお問い合わせ：{ $form }
email-owner-intro = 「{ $form }」から { $date } に新しいお問い合わせがありました。
email-owner-reference = 受付番号：
email-owner-reply = このメールに返信すると、送信者に直接回答できます。
email-file-attached = 添付
email-file-download = ダウンロード: { $path }
email-file-gone = すでに保存されていません

## Chat messages (teams, discord, telegram, line, wecom, dingtalk, feishu): to the form's owners, in the form's locale

chat-title = 新しいお問い合わせ：{ $form }
chat-reference = 受付番号：{ $reference }
chat-route = 振り分け：{ $route }
chat-field = { $label }：{ $value }
chat-open = 管理画面で開く

## Dates

date-time = { $year }年{ $month }月{ $day }日（{ $weekday }）{ $time }（{ $zone }）
weekday = { $n ->
    [1] 月
    [2] 火
    [3] 水
    [4] 木
    [5] 金
    [6] 土
   *[0] 日
}
month-name = { $n }月

## embed.js

embed-checking = ロボットでないことを確認しています…
embed-sending = 送信しています…
embed-errors = 下記の項目を修正してください。まだ何も送信されていません。
embed-thanks = ありがとうございました。メッセージを受け付けました。
embed-reference = 受付番号：
embed-unreachable = サーバーに接続できませんでした（またはこのサイトからはこのフォームを送信できません）。入力内容はそのまま残っていますので、もう一度「送信」を押してください。
embed-retrying = 接続に問題があります。再試行しています…
embed-conflict = このフォームは別の内容ですでに送信されています。最初に送信された内容を保持しました。今回の内容を新しいメッセージとして送るには、もう一度「送信」を押してください。
embed-rate-limited = 短時間に多くのメッセージが送信されました。{ $seconds } 秒ほど待ってから、もう一度「送信」を押してください。
embed-unavailable = ただいまサービスを一時的にご利用いただけません。入力内容は失われていません。{ $seconds } 秒後にもう一度「送信」を押してください。
embed-forbidden = このサイトからはこのフォームを送信できません。
embed-failed = メッセージを送信できませんでした。
embed-file-too-large = ファイルが大きすぎます。小さいファイルを選んでください。まだ何も送信されていません。
