//! Visitors in their own language: an `auto` form negotiates Traditional Chinese from
//! `Accept-Language`, 422s keep stable codes beside localised messages that name the field by
//! its label, emails go out in the form's language with a local date, and CSV files from
//! Excel (Big5, UTF-16) import while an export with a BOM reads back.

use chrono::NaiveDateTime;
use mail_parser::MessageParser;
use onceform::base::i18n::{local_date_time, Locale};
use onceform::config::{Config, FormConfig, FormTexts, LocaleChoice};
use serde_json::{json, Value};

use crate::lifecycle::{onceform_with, stdout};
use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{new_key, spawn_app, spawn_app_with, Backend};

on_both_backends!(
    an_auto_form_speaks_traditional_chinese_to_a_zh_tw_browser,
    the_confirmation_is_in_the_forms_language_with_a_local_date,
    an_auto_forms_confirmation_is_in_the_language_the_visitor_was_served,
    big5_and_utf16_files_import_and_an_export_with_a_bom_reads_back,
);

const ZH_TW: &str = r#"
title = "聯絡我們"
intro = "請告訴我們您的需求，我們通常會在一個工作天內回覆。"
labels = { name = "您的姓名", email = "電子郵件", company = "公司名稱", topic = "詢問主題", message = "訊息內容" }
options = { topic = { Sales = "業務洽詢", Support = "技術支援", Partnership = "合作提案", Other = "其他" } }
email = { signature = "星辰科技 客服團隊" }
"#;

const JA: &str = r#"
title = "お問い合わせ"
intro = "ご用件をお知らせください。通常、1営業日以内にご返信いたします。"
labels = { name = "お名前", email = "メールアドレス", company = "会社名", topic = "ご用件", message = "お問い合わせ内容" }
options = { topic = { Sales = "営業・お見積もり", Support = "サポート", Partnership = "提携のご相談", Other = "その他" } }
"#;

/// The demo form in `locale`, with its texts in zh-TW and ja, dates in Taipei time.
pub fn speak(form: &mut FormConfig, locale: LocaleChoice) {
    form.locale = locale;
    form.locales = vec![Locale::En, Locale::ZhTw, Locale::Ja];
    form.time_zone = "Asia/Taipei".parse().unwrap();
    form.min_fill_seconds = 0;
    let texts = |t: &str| toml::from_str::<FormTexts>(t).unwrap();
    form.texts = [(Locale::ZhTw, texts(ZH_TW)), (Locale::Ja, texts(JA))].into();
}

async fn an_auto_form_speaks_traditional_chinese_to_a_zh_tw_browser(backend: Backend) {
    let app =
        spawn_app_with(backend, |c| speak(c.forms.get_mut("contact").unwrap(), LocaleChoice::Auto)).await;
    let get =
        |lang: &'static str| app.client.get(app.url("/f/contact")).header("Accept-Language", lang).send();
    let resp = get("zh-TW,zh;q=0.9,en;q=0.5").await.unwrap();
    assert_eq!(resp.headers()["content-language"], "zh-TW");
    let page = resp.text().await.unwrap();
    for text in [
        r#"<html lang="zh-TW">"#,
        "<h1>聯絡我們</h1>",
        ">您的姓名 <span class=\"req\"",
        "(必填)",
        r#"<option value="Sales">業務洽詢</option>"#,
        "此欄位請留空",
        ">送出</button>",
    ] {
        assert!(page.contains(text), "{text}:\n{page}");
    }
    let page = get("ja-JP,ja;q=0.9").await.unwrap().text().await.unwrap();
    assert!(page.contains(r#"<html lang="ja">"#) && page.contains("<h1>お問い合わせ</h1>"), "{page}");
    let page = get("fr-CH,fr;q=0.9").await.unwrap().text().await.unwrap();
    assert!(
        page.contains(r#"<html lang="en">"#) && page.contains("<h1>Contact us</h1>"),
        "the first locale: {page}"
    );

    // The JSON API: messages by Accept-Language, codes the same in every language.
    let bad = json!({"name": "", "email": "not-an-email", "topic": "Gossip", "message": "你".repeat(5001)});
    let submit = |lang: &'static str| {
        app.client
            .post(app.url("/api/forms/contact/submissions"))
            .header("Idempotency-Key", new_key())
            .header("Accept-Language", lang)
            .json(&bad)
            .send()
    };
    let resp = submit("zh-TW,zh;q=0.9,en;q=0.5").await.unwrap();
    assert_eq!(
        (resp.status().as_u16(), resp.headers()["content-language"].to_str().unwrap()),
        (422, "zh-TW")
    );
    let zh: Value = resp.json().await.unwrap();
    assert_eq!(zh["title"], "Some fields are invalid", "titles stay as they are");
    assert_eq!(zh["type"], "https://onceform.dev/problems/validation-failed");
    assert_eq!(zh["errors"]["name"], json!(["請填寫「您的姓名」"]));
    assert_eq!(zh["errors"]["email"], json!(["「電子郵件」不是有效的電子郵件地址"]));
    assert_eq!(
        zh["errors"]["topic"],
        json!(["「詢問主題」請從以下選項中選擇：業務洽詢、技術支援、合作提案、其他"])
    );
    assert_eq!(zh["errors"]["message"], json!(["「訊息內容」最多只能輸入 5000 個字"]));
    let codes = json!({"name": ["required"], "email": ["invalid_email"], "topic": ["not_an_option"], "message": ["too_long"]});
    assert_eq!(zh["codes"], codes);
    let en: Value = submit("en-US,en;q=0.9").await.unwrap().json().await.unwrap();
    assert_eq!(en["errors"]["email"], json!(["Email is not a valid email address"]));
    assert_eq!(en["codes"], codes, "codes do not change with the language");
    let ja: Value = submit("ja").await.unwrap().json().await.unwrap();
    assert_eq!(ja["errors"]["name"], json!(["「お名前」を入力してください"]));
    assert_eq!(app.stats().await.submissions, 0);
}

/// The codes of the 422 body are a contract: each kind of mistake, its code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_error_codes_in_the_422_are_stable() {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        let extra = Config::parse(
            "[forms.callback]\ntitle = \"Call back\"\n[[forms.callback.fields]]\nname = \"phone\"\ntype = \"phone\"\n",
        )
        .unwrap();
        c.forms.get_mut("contact").unwrap().fields.extend(extra.forms["callback"].fields.clone());
    })
    .await;
    let body = json!({"name": "x".repeat(121), "email": "a@", "phone": "12", "topic": "Gossip", "colour": "red",
                      "company": "A\u{202e}B"});
    let resp = app.submit(&new_key(), &body).await;
    assert_eq!(resp.status(), 422);
    let problem: Value = resp.json().await.unwrap();
    assert_eq!(
        problem["codes"],
        json!({"name": ["too_long"], "email": ["invalid_email"], "phone": ["invalid_phone"], "topic": ["not_an_option"],
               "colour": ["unknown_field"], "company": ["invisible_characters"], "message": ["required"]})
    );
    assert_eq!(problem["errors"]["phone"], json!(["phone is not a valid phone number"]));
    assert_eq!(problem["errors"]["colour"], json!(["colour is not a field of this form"]));
}

async fn the_confirmation_is_in_the_forms_language_with_a_local_date(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        let form = c.forms.get_mut("contact").unwrap();
        speak(form, LocaleChoice::Fixed(Locale::ZhTw));
        form.confirmation_echo = true; // the greeting names the visitor only with the opt-in
    })
    .await;
    let key = new_key();
    let body = json!({"name": "陳　小明", "email": "chen@例子.台灣", "topic": "Support", "message": "印表機無法連線，請協助。"});
    assert_eq!(d.app.submit(&key, &body).await.status(), 201);
    let stored = d.app.stored_fields(&key).await.unwrap();
    assert_eq!(
        (stored["email"].as_str(), stored["name"].as_str()),
        (Some("chen@例子.台灣"), Some("陳 小明")),
        "as typed"
    );
    d.settle(&d.worker()).await;
    let received_at: NaiveDateTime = {
        let status: Value = d
            .app
            .client
            .get(d.app.url(&format!("/api/forms/contact/submissions/{key}")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        chrono::DateTime::parse_from_rfc3339(status["received_at"].as_str().unwrap()).unwrap().naive_utc()
    };
    let local = local_date_time(Locale::ZhTw, received_at, "Asia/Taipei".parse().unwrap());
    assert!(local.ends_with("（UTC+8）") && local.contains("年") && local.contains("（週"), "{local}");

    let mail = d.smtp.messages();
    assert_eq!(mail.len(), 2, "{mail:?}");
    let confirmation =
        mail.iter().find(|m| m.contains("\nTo: chen@xn--fsqu00a.xn--kpry57d")).expect("sent as IDNA");
    let message = MessageParser::default().parse(confirmation.as_bytes()).unwrap();
    let reference = onceform::base::format::reference(
        &d.app
            .query(move |pool| {
                onceform::with_conn!(pool, |c| {
                    use diesel::prelude::*;
                    use onceform::db::schema::submissions::dsl as s;
                    s::submissions
                        .filter(s::operation_id.eq(&key))
                        .select(s::id)
                        .first::<String>(c)
                        .map_err(onceform::db::DbError::from)
                })
            })
            .await,
    );
    assert_eq!(message.subject(), Some(format!("我們已收到您的訊息（{reference}）").as_str()));
    assert_eq!(message.header_raw("Content-Language").map(str::trim), Some("zh-TW"));
    let text = message.body_text(0).unwrap();
    assert!(
        text.starts_with("陳 小明 您好：\r\n\r\n感謝您透過「聯絡我們」與我們聯絡。")
            || text.starts_with("陳 小明 您好：\n\n感謝您透過「聯絡我們」與我們聯絡。"),
        "{text}"
    );
    assert!(text.contains(&format!("我們已於 {local} 收到您的訊息")), "the local date {local}:\n{text}");
    assert!(text.contains(&format!("您的案件編號： {reference}")), "{text}");
    assert!(text.contains("星辰科技 客服團隊"), "the form's own words in zh-TW: {text}");
    let html = message.body_html(0).unwrap();
    assert!(html.contains(r#"<html lang="zh-TW">"#) && html.contains("這是系統自動寄出的確認信"), "{html}");

    let owner = mail.iter().find(|m| m.contains("\nTo: sales@example.com")).unwrap();
    let owner = MessageParser::default().parse(owner.as_bytes()).unwrap();
    assert_eq!(owner.subject(), Some(format!("新的詢問：聯絡我們（{reference}）").as_str()));
    let text = owner.body_text(0).unwrap();
    assert!(
        text.contains("詢問主題: Support") && text.contains("訊息內容: 印表機無法連線"),
        "labels in zh-TW: {text}"
    );
    assert!(owner.header_raw("Reply-To").is_some_and(|r| r.contains("chen@xn--fsqu00a.xn--kpry57d")));
}

fn import(app: &crate::support::TestApp, file: &std::path::Path, extra: &[&str]) -> String {
    let mut args = vec!["import", "--form", "contact", file.to_str().unwrap(), "--source", "excel"];
    args.extend_from_slice(extra);
    let out = onceform_with(app, onceform::config::DEFAULT_CONFIG, &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout(&out)
}

async fn big5_and_utf16_files_import_and_an_export_with_a_bom_reads_back(backend: Backend) {
    let app = spawn_app(backend).await;
    let dir = std::env::temp_dir().join(format!("onceform-i18n-csv-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    // As Excel on Traditional Chinese Windows saves "CSV": Big5 (code page 950), CRLF.
    let big5_text = "name,email,topic,message\r\n陳小明,chen@example.tw,Sales,\"想詢問報價，\r\n數量 40 台\"\r\n林美玲,lin@example.tw,Support,印表機無法連線\r\n";
    let (big5, _, unmappable) = encoding_rs::BIG5.encode(big5_text);
    assert!(!unmappable);
    let big5_file = dir.join("big5.csv");
    std::fs::write(&big5_file, &big5).unwrap();
    let refused = onceform_with(
        &app,
        onceform::config::DEFAULT_CONFIG,
        &["import", "--form", "contact", big5_file.to_str().unwrap()],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--encoding big5"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(import(&app, &big5_file, &["--encoding", "big5"])
        .starts_with("imported 2, already present 0, rejected 0"));
    // "Unicode text" from Excel: UTF-16 LE with a BOM (tab-separated there; a comma file here).
    let utf16_text =
        "name,email,topic,message\r\n山田太郎,yamada@example.jp,Partnership,提携のご相談です\r\n";
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(utf16_text.encode_utf16().flat_map(u16::to_le_bytes));
    let utf16_file = dir.join("utf16.csv");
    std::fs::write(&utf16_file, &utf16).unwrap();
    assert!(import(&app, &utf16_file, &[]).starts_with("imported 1, already present 0, rejected 0"));

    let viewer = app.sign_in(onceform::services::accounts::Role::Viewer).await;
    let export =
        app.admin_get(Some(&viewer), "/admin/submissions.csv?form=contact").await.bytes().await.unwrap();
    assert!(export.starts_with("\u{feff}".as_bytes()), "UTF-8 with a BOM");
    let text = String::from_utf8(export[3..].to_vec()).unwrap();
    for typed in ["陳小明", "想詢問報價，\n數量 40 台", "林美玲", "山田太郎", "提携のご相談です"]
    {
        assert!(text.contains(typed), "{typed}: {text}");
    }
    // The export imports as it is into another instance, each row with what was typed.
    let other = spawn_app(backend).await;
    let export_file = dir.join("export.csv");
    std::fs::write(&export_file, &export).unwrap();
    assert!(import(&other, &export_file, &[]).starts_with("imported 3, already present 0, rejected 0"));
    assert!(
        import(&other, &export_file, &[]).starts_with("imported 0, already present 3"),
        "its submission_id is the row's identity"
    );
    let mut again = other
        .admin_get(
            Some(&other.sign_in(onceform::services::accounts::Role::Viewer).await),
            "/admin/submissions.csv?form=contact",
        )
        .await
        .text()
        .await
        .unwrap();
    again = again.trim_start_matches('\u{feff}').to_string();
    for typed in [
        "陳小明,chen@example.tw,,Sales,\"想詢問報價，\n數量 40 台\"",
        "山田太郎,yamada@example.jp,,Partnership,提携のご相談です",
    ] {
        assert!(again.contains(typed), "{typed}: {again}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The 429 and 403 pages of a zh-TW form, and its 503 page, speak zh-TW.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusal_pages_are_in_the_forms_language() {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        c.server.rate_limit = true;
        let form = c.forms.get_mut("contact").unwrap();
        speak(form, LocaleChoice::Fixed(Locale::ZhTw));
        form.rate_limit = toml::from_str("requests = 1\nper_seconds = 3600").unwrap();
        form.allowed_origins = vec!["https://www.example.tw".into()];
    })
    .await;
    let fields = [("name", "陳小明"), ("email", "chen@example.tw"), ("topic", "Sales"), ("message", "你好")];
    let post = |origin: Option<&'static str>| {
        let mut req = app.client.post(app.url("/f/contact")).form(&fields);
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        req.send()
    };
    let forbidden = post(Some("https://evil.example")).await.unwrap();
    assert_eq!(forbidden.status(), 403);
    let page = forbidden.text().await.unwrap();
    assert!(page.contains(r#"<html lang="zh-TW">"#) && page.contains("此網站不能送出這份表單"), "{page}");
    assert!(post(None).await.unwrap().status().is_redirection());
    let limited = post(None).await.unwrap();
    assert_eq!(limited.status(), 429);
    assert!(limited.headers().contains_key("retry-after"));
    let page = limited.text().await.unwrap();
    assert!(page.contains("送出次數過多") && page.contains("秒後再送出"), "{page}");
}

/// On a `locale = "auto"` form the visitor's negotiated locale is stored with the submission:
/// their confirmation is written in it, the owners' notification in the form's first locale;
/// a retry in another language replays and sends nothing more.
async fn an_auto_forms_confirmation_is_in_the_language_the_visitor_was_served(backend: Backend) {
    let d =
        spawn_delivery_app(backend, |c| speak(c.forms.get_mut("contact").unwrap(), LocaleChoice::Auto)).await;
    let key = new_key();
    let body = json!({"name": "山田 花子", "email": "hanako@example.jp", "topic": "Support", "message": "プリンターがつながりません。"});
    let submit = |lang: &'static str| {
        d.app
            .client
            .post(d.app.url("/api/forms/contact/submissions"))
            .header("Idempotency-Key", &key)
            .header("Accept-Language", lang)
            .json(&body)
            .send()
    };
    assert_eq!(submit("ja,en;q=0.5").await.unwrap().status(), 201);
    assert_eq!(submit("en").await.unwrap().status(), 200, "a retry in another language replays");
    d.settle(&d.worker()).await;

    let mail = d.smtp.messages();
    assert_eq!(mail.len(), 2, "{mail:?}");
    let language = |to: &str| {
        let raw = mail
            .iter()
            .find(|m| m.contains(&format!("\nTo: {to}")))
            .unwrap_or_else(|| panic!("no mail to {to}"));
        let message = MessageParser::default().parse(raw.as_bytes()).unwrap();
        (
            message.header_raw("Content-Language").map(|l| l.trim().to_string()),
            message.subject().map(String::from),
        )
    };
    let (lang, subject) = language("hanako@example.jp");
    assert_eq!(lang.as_deref(), Some("ja"));
    assert!(subject.as_deref().is_some_and(|s| s.contains("お問い合わせを受け付けました")), "{subject:?}");
    let owner = mail.iter().find(|m| !m.contains("\nTo: hanako@example.jp")).unwrap();
    let owner = MessageParser::default().parse(owner.as_bytes()).unwrap();
    assert_eq!(owner.header_raw("Content-Language").map(str::trim), Some("en"), "the owners' language");
}
