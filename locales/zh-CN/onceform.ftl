# onceform 访客看到的文字：简体中文（中国大陆）。

## Pages

index-title = 表单
form-errors = 请修改下方标出的字段。目前尚未提交任何内容。
form-required = 必填
form-choose = 请选择…
form-honeypot = 此字段请留空
form-send = 提交
captcha-checking = 正在验证您不是机器人…
receipt-title = 谢谢您
receipt-received = 我们已收到您通过“{ $form }”提交的留言。
receipt-reference = 您的编号：
receipt-once = 再次提交表单或刷新本页面，都不会重复提交。
receipt-new = 提交新的咨询
page-back = 返回表单
not-found-title = 页面不存在
not-found-body = 这里没有这个表单或回执。
conflict-title = 此表单已用不同的内容提交过
conflict-body = 我们保留了您第一次提交的内容，并将这个版本单独存放，交由我们的团队审核。如需提交新的咨询，请打开一份新的表单。
conflict-link = 打开新的表单
in-progress-title = 您的留言仍在处理中
in-progress-body = 您第一次提交的内容还在处理中。请稍等片刻再提交一次，不会重复提交。
expired-title = 此表单已过期
expired-body = 此表单打开的时间太久，因此没有保存任何内容。请打开新的表单后重新提交。
rate-limited-title = 提交次数过多
rate-limited-body = 刚才从这里提交的留言太多了。请等待 { $seconds } 秒后再提交。
unavailable-title = 服务暂时不可用
unavailable-body = 您的内容没有丢失。请几秒后再提交一次；同一条留言只会被受理一次。
forbidden-title = 此网站不能提交这个表单
forbidden-body = 无法从您使用的页面提交这个表单。请使用我们网站上的表单。
too-large-title = 留言太长了
too-large-body = 您提交的内容超过了此表单允许的大小。请缩短后再提交。
timeout-title = 留言未能及时送达
timeout-body = 网络连接太慢，表单无法提交。请再提交一次。
bad-request-title = 无法读取此表单
bad-request-body = 请重新打开表单，并从表单页面提交。
failed-title = 表单无法提交
failed-body = 我们这边出现了问题，没有保存任何内容。请稍后再试。

## Field messages (422)

field-required = 请填写“{ $label }”
field-invalid-email = “{ $label }”不是有效的电子邮件地址
field-invalid-phone = “{ $label }”不是有效的电话号码
field-too-long = “{ $label }”最多只能输入 { $max } 个字符
field-not-an-option = “{ $label }”请从以下选项中选择：{ $options }
field-unknown = “{ $label }”不是此表单的字段
field-given-twice = “{ $label }”重复提交了不止一次
field-control-characters = “{ $label }”包含控制字符
field-invisible-characters = “{ $label }”包含不可见字符（双向控制字符或零宽空格）
field-invalid-journey = “{ $label }”只能由 1 到 128 个 A-Z a-z 0-9 _ - . : 字符组成
field-not-a-boolean = “{ $label }”只能勾选或不勾选
field-consent-required = 请同意“{ $label }”
field-not-a-number = “{ $label }”必须是数字
field-below-minimum = “{ $label }”不得小于 { $limit }
field-above-maximum = “{ $label }”不得大于 { $limit }
field-off-step = “{ $label }”必须以 { $limit } 为间隔
field-invalid-date = “{ $label }”必须是日期（YYYY-MM-DD）
field-too-early = “{ $label }”不得早于 { $limit }
field-too-late = “{ $label }”不得晚于 { $limit }
field-invalid-url = “{ $label }”必须是以 http:// 或 https:// 开头的网址
field-too-many-fields = “{ $label }”超出此表单可保存的字段数（最多 { $max } 个）
field-invalid-file-type = “{ $label }”的文件类型必须是：{ $options }
field-file-too-large = “{ $label }”的文件不能超过 { $limit }
field-too-many-files = “{ $label }”最多可上传 { $max } 个文件
field-unknown-upload = “{ $label }”所指的上传文件不存在或已过期，请重新上传
list-separator = 、

## Emails

email-greeting = { $name }，您好：
email-greeting-anonymous = 您好：
email-confirmation-subject = 我们已收到您的留言
email-subject-reference = { $subject }（{ $reference }）
email-confirmation-intro = 感谢您通过“{ $form }”与我们联系。我们已于 { $date } 收到您的留言，会尽快回复您。
email-reference = 您的编号：
email-echo = 您提交的内容：
email-automatic = 这是系统自动发送的确认邮件，您无需回复。
email-owner-subject = 新咨询：{ $form }
email-owner-intro = “{ $form }”于 { $date } 收到一条新咨询。
email-owner-reference = 编号：
email-owner-reply = 直接回复这封邮件，即可答复访客。
email-file-attached = 已附加
email-file-download = 下载：{ $path }
email-file-gone = 已不再保存

## Chat messages (teams, discord, telegram, line, wecom, dingtalk, feishu): to the form's owners, in the form's locale

chat-title = 新咨询：{ $form }
chat-reference = 编号：{ $reference }
chat-route = 分派路线：{ $route }
chat-field = { $label }：{ $value }
chat-open = 在管理后台打开

## Dates

date-time = { $year }年{ $month }月{ $day }日（{ $weekday }）{ $time }（{ $zone }）
weekday = { $n ->
    [1] 周一
    [2] 周二
    [3] 周三
    [4] 周四
    [5] 周五
    [6] 周六
   *[0] 周日
}
month-name = { $n }月

## embed.js

embed-checking = 正在验证您不是机器人…
embed-sending = 正在提交…
embed-errors = 请修改下方标出的字段。目前尚未提交任何内容。
embed-thanks = 谢谢您，我们已收到您的留言。
embed-reference = 您的编号：
embed-unreachable = 无法连接到服务器（或此网站不能提交这个表单）。您填写的内容都还在，请再点一次“提交”。
embed-retrying = 连接出现问题，正在重试…
embed-conflict = 此表单已用不同的内容提交过。我们保留了您第一次提交的内容；再点一次“提交”，即可将这个版本作为新留言提交。
embed-rate-limited = 刚才从这里提交的留言太多了。请等待 { $seconds } 秒后再点“提交”。
embed-unavailable = 服务暂时不可用，您的内容没有丢失。请在 { $seconds } 秒后再点一次“提交”。
embed-forbidden = 此网站不能提交这个表单。
embed-failed = 留言无法提交。
embed-file-too-large = 文件太大，请选择较小的文件。尚未提交任何内容。
