//! In headless Chromium: the form page, a 422 and the receipt of a form in zh-TW and in ja,
//! and embed.js on a static page whose `lang` is zh-TW. Screenshots (CJK glyphs, from the
//! fonts-noto-cjk package that ./test.sh installs): target/test-artifacts/i18n-*.png.

use std::time::{Duration, Instant};

use onceform::base::i18n::Locale;
use onceform::config::LocaleChoice;

use crate::support::browser::Browser;
use crate::support::static_site::StaticSite;
use crate::support::{spawn_app_with, Backend};
use crate::web::i18n::speak;

/// Waits up to `seconds` for `needle` in the page.
async fn wait_long(browser: &Browser, needle: &str, seconds: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        let source = browser.source().await;
        if source.contains(needle) {
            return source;
        }
        assert!(Instant::now() < deadline, "the page never showed {needle:?}:\n{source}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct Texts {
    name: &'static str,
    tag: &'static str,
    heading: &'static str,
    visitor: &'static str,
    message: &'static str,
    email_error: &'static str,
    receipt: &'static str,
}

async fn form_page_422_and_receipt(locale: Locale, t: Texts) {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        speak(c.forms.get_mut("contact").unwrap(), LocaleChoice::Fixed(locale))
    })
    .await;
    let browser = Browser::start().await;
    browser.goto(&app.url("/f/contact")).await;
    let page = browser.source().await;
    assert!(page.contains(&format!(r#"<html lang="{}">"#, t.tag)) && page.contains(t.heading), "{page}");
    browser.screenshot(&format!("i18n-{}-form", t.name)).await;

    browser.type_into("#f-name", t.visitor).await;
    browser.type_into("#f-email", "not-an-email").await;
    browser.type_into("#f-message", t.message).await;
    browser.click("#f-topic option:nth-child(2)").await;
    browser.click("button[type=submit]").await;
    let page = wait_long(&browser, "class=\"error\"", 10).await;
    assert!(page.contains(t.email_error), "{}:\n{page}", t.email_error);
    assert!(page.contains(&format!("value=\"{}\"", t.visitor)), "the fill is kept");
    browser.screenshot(&format!("i18n-{}-422", t.name)).await;
    assert_eq!(app.stats().await.submissions, 0);

    browser.clear("#f-email").await;
    browser.type_into("#f-email", "yamada@例え.テスト").await;
    browser.click("button[type=submit]").await;
    let page = wait_long(&browser, "OF-", 10).await;
    assert!(page.contains(t.receipt), "{}:\n{page}", t.receipt);
    assert!(browser.current_url().await.contains("/receipt/"));
    browser.screenshot(&format!("i18n-{}-receipt", t.name)).await;
    assert_eq!(app.stats().await.submissions, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zh_tw_form_page_its_422_and_receipt_in_a_browser() {
    form_page_422_and_receipt(
        Locale::ZhTw,
        Texts {
            name: "zh-TW",
            tag: "zh-TW",
            heading: "<h1>聯絡我們</h1>",
            visitor: "陳小明",
            message: "您好，想詢問 40 台印表機的報價。",
            email_error: "「電子郵件」不是有效的電子郵件地址",
            receipt: "我們已收到您透過「聯絡我們」送出的訊息。",
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ja_form_page_its_422_and_receipt_in_a_browser() {
    form_page_422_and_receipt(
        Locale::Ja,
        Texts {
            name: "ja",
            tag: "ja",
            heading: "<h1>お問い合わせ</h1>",
            visitor: "山田太郎",
            message: "お世話になっております。見積もりをお願いします。",
            email_error: "「メールアドレス」には正しいメールアドレスを入力してください",
            receipt: "「お問い合わせ」へのメッセージを受け付けました。",
        },
    )
    .await;
}

fn zh_tw_page(form_url: &str, script_url: &str) -> String {
    format!(
        r#"<!doctype html><html lang="zh-TW"><head><meta charset="utf-8"><title>星辰科技</title>
<style>body{{font-family:sans-serif;max-width:40rem;margin:2rem auto}} label{{display:block}}
input,select,textarea{{width:100%}} .onceform-error{{color:#b00020}} .onceform-receipt{{border:2px solid #2a7;padding:1rem}}</style>
</head><body><h1>聯絡我們（靜態網站）</h1>
<form data-onceform="{form_url}">
<p><label for="name">您的姓名</label><input id="name" name="name"></p>
<p><label for="email">電子郵件</label><input id="email" name="email"></p>
<p><label for="topic">詢問主題</label><select id="topic" name="topic"><option value="Sales">業務洽詢</option><option value="Support">技術支援</option></select></p>
<p><label for="message">訊息內容</label><textarea id="message" name="message"></textarea></p>
<button type="submit">送出</button>
</form>
<script src="{script_url}"></script>
</body></html>"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embed_js_on_a_zh_tw_static_page_speaks_traditional_chinese() {
    let site = StaticSite::start().await;
    let origin = site.origin.clone();
    let app = spawn_app_with(Backend::Sqlite, |c| {
        let form = c.forms.get_mut("contact").unwrap();
        speak(form, LocaleChoice::Auto);
        form.allowed_origins = vec![origin];
    })
    .await;
    site.set_page(zh_tw_page(&app.url("/f/contact"), &app.url("/embed.js?form=contact")));
    let browser = Browser::start().await;
    browser.goto(&format!("{}/contact.html", site.origin)).await;
    browser.type_into("#name", "陳小明").await;
    browser.type_into("#email", "chen@").await;
    browser.type_into("#message", "想詢問 40 台印表機的報價。").await;
    browser.click("button[type=submit]").await;
    let page = wait_long(&browser, "onceform-error-email", 10).await;
    assert!(page.contains(r#"id="onceform-error-email">「電子郵件」不是有效的電子郵件地址</p>"#), "{page}");
    assert!(page.contains("請修正下方標示的欄位。目前尚未送出任何內容。"), "{page}");
    browser.screenshot("i18n-embed-zh-TW-422").await;

    browser.clear("#email").await;
    browser.type_into("#email", "chen@例子.台灣").await;
    browser.click("button[type=submit]").await;
    let page = wait_long(&browser, "onceform-reference", 15).await;
    assert!(page.contains("感謝您，我們已收到您的訊息。") && page.contains("您的案件編號："), "{page}");
    browser.screenshot("i18n-embed-zh-TW-receipt").await;
    assert_eq!(app.stats().await.submissions, 1);
}
