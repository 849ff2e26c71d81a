# onceform 訪客看到的文字：繁體中文（台灣）。

## Pages

index-title = 表單
form-errors = 請修正下方標示的欄位。目前尚未送出任何內容。
form-required = 必填
form-choose = 請選擇…
form-honeypot = 此欄位請留空
form-send = 送出
captcha-checking = 正在確認您不是機器人…
receipt-title = 感謝您
receipt-received = 我們已收到您透過「{ $form }」送出的訊息。
receipt-reference = 您的案件編號：
receipt-once = 再次送出表單或重新整理此頁面，都不會重複送出。
receipt-new = 提出新的詢問
page-back = 返回表單
not-found-title = 找不到頁面
not-found-body = 這裡沒有這份表單或收據。
conflict-title = 這份表單已用不同的內容送出過
conflict-body = 我們保留了您第一次送出的內容，並將這個版本另外存放，交由我們的團隊審閱。若要提出新的詢問，請開啟一份新的表單。
conflict-link = 開啟新的表單
in-progress-title = 您的訊息仍在處理中
in-progress-body = 您第一次送出的內容還在處理中。請稍候片刻再送出一次，不會重複送出。
expired-title = 這份表單已過期
expired-body = 這份表單開啟的時間太久，因此沒有儲存任何內容。請開啟新的表單後再送出一次。
rate-limited-title = 送出次數過多
rate-limited-body = 剛才從這裡送出的訊息太多了。請等候 { $seconds } 秒後再送出。
unavailable-title = 服務暫時無法使用
unavailable-body = 您的內容沒有遺失。請在幾秒後再送出一次；同一則訊息只會被受理一次。
forbidden-title = 此網站不能送出這份表單
forbidden-body = 無法從您使用的頁面送出這份表單。請改用我們網站上的表單。
too-large-title = 訊息太長了
too-large-body = 您送出的內容超過這份表單可接受的大小。請縮短後再送出。
timeout-title = 訊息未能及時送達
timeout-body = 網路連線太慢，表單無法送出。請再送出一次。
bad-request-title = 無法讀取這份表單
bad-request-body = 請重新開啟表單，並從表單頁面送出。
failed-title = 表單無法送出
failed-body = 我們這邊發生問題，沒有儲存任何內容。請稍後再試。

## Field messages (422)

field-required = 請填寫「{ $label }」
field-invalid-email = 「{ $label }」不是有效的電子郵件地址
field-invalid-phone = 「{ $label }」不是有效的電話號碼
field-too-long = 「{ $label }」最多只能輸入 { $max } 個字
field-not-an-option = 「{ $label }」請從以下選項中選擇：{ $options }
field-unknown = 「{ $label }」不是這份表單的欄位
field-given-twice = 「{ $label }」重複送出了不只一次
field-control-characters = 「{ $label }」含有控制字元
field-invisible-characters = 「{ $label }」含有看不見的字元（雙向控制字元或零寬空格）
field-invalid-journey = 「{ $label }」只能由 1 到 128 個 A-Z a-z 0-9 _ - . : 字元組成
field-not-a-boolean = 「{ $label }」只能勾選或不勾選
field-consent-required = 請同意「{ $label }」
field-not-a-number = 「{ $label }」必須是數字
field-below-minimum = 「{ $label }」不得小於 { $limit }
field-above-maximum = 「{ $label }」不得大於 { $limit }
field-off-step = 「{ $label }」必須以 { $limit } 為間隔
field-invalid-date = 「{ $label }」必須是日期（YYYY-MM-DD）
field-too-early = 「{ $label }」不得早於 { $limit }
field-too-late = 「{ $label }」不得晚於 { $limit }
field-invalid-url = 「{ $label }」必須是以 http:// 或 https:// 開頭的網址
field-too-many-fields = 「{ $label }」超出此表單可保存的欄位數（最多 { $max } 個）
field-invalid-file-type = 「{ $label }」的檔案類型必須是：{ $options }
field-file-too-large = 「{ $label }」的檔案不可超過 { $limit }
field-too-many-files = 「{ $label }」最多可上傳 { $max } 個檔案
field-unknown-upload = 「{ $label }」所指的上傳檔案不存在或已過期，請重新上傳
list-separator = 、

## Emails

email-greeting = { $name } 您好：
email-greeting-anonymous = 您好：
email-confirmation-subject = 我們已收到您的訊息
email-subject-reference = { $subject }（{ $reference }）
email-confirmation-intro = 感謝您透過「{ $form }」與我們聯絡。我們已於 { $date } 收到您的訊息，將盡快回覆您。
email-reference = 您的案件編號：
email-echo = 您送出的內容：
email-automatic = 這是系統自動寄出的確認信，您無須回覆。
email-owner-subject = 新的詢問：{ $form }
email-owner-intro = 「{ $form }」於 { $date } 收到一筆新的詢問。
email-owner-reference = 案件編號：
email-owner-reply = 直接回覆這封信，即可回覆訪客。
email-file-attached = 已附加
email-file-download = 下載：{ $path }
email-file-gone = 已不再保存

## Chat messages (teams, discord, telegram, line, wecom, dingtalk, feishu): to the form's owners, in the form's locale

chat-title = 新的詢問：{ $form }
chat-reference = 案件編號：{ $reference }
chat-route = 分派路線：{ $route }
chat-field = { $label }：{ $value }
chat-open = 在管理後台開啟

## Dates

date-time = { $year }年{ $month }月{ $day }日（{ $weekday }）{ $time }（{ $zone }）
weekday = { $n ->
    [1] 週一
    [2] 週二
    [3] 週三
    [4] 週四
    [5] 週五
    [6] 週六
   *[0] 週日
}
month-name = { $n }月

## embed.js

embed-checking = 正在確認您不是機器人…
embed-sending = 傳送中…
embed-errors = 請修正下方標示的欄位。目前尚未送出任何內容。
embed-thanks = 感謝您，我們已收到您的訊息。
embed-reference = 您的案件編號：
embed-unreachable = 無法連線到伺服器（或此網站不能送出這份表單）。您輸入的內容都還在，請再按一次「送出」。
embed-retrying = 連線發生問題，正在重試…
embed-conflict = 這份表單已用不同的內容送出過。我們保留了您第一次送出的內容；再按一次「送出」，即可將這個版本當作新訊息送出。
embed-rate-limited = 剛才從這裡送出的訊息太多了。請等候 { $seconds } 秒後再按「送出」。
embed-unavailable = 服務暫時無法使用，您的內容沒有遺失。請在 { $seconds } 秒後再按一次「送出」。
embed-forbidden = 此網站不能送出這份表單。
embed-failed = 訊息無法送出。
embed-file-too-large = 檔案太大，請選擇較小的檔案。尚未送出任何內容。
