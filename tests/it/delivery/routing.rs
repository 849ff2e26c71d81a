//! Routing (`[[forms.F.routes]]`): the first route whose `when` holds picks a submission's
//! effects and owner recipients; the answer names it, the admin shows it, and a replay keeps
//! it after the routes change.

use onceform::config::{Config, RouteConfig};
use onceform::services::accounts::Role;
use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::{new_key, Backend};

on_both_backends!(
    a_support_question_reaches_only_support_and_a_sales_question_only_sales,
    a_replay_after_the_routes_change_answers_the_same_body,
    a_route_may_send_to_a_chat_the_form_does_not_list,
    released_spam_takes_the_route_it_matches_as_a_real_inquiry,
);

/// The routes of `toml` (`[[forms.contact.routes]]` tables), parsed as the file's would be.
fn routes(toml: &str) -> Vec<RouteConfig> {
    let text = format!(
        "[forms.contact]\ntitle = 'x'\nfields = [{{ name = 'topic', type = 'select', \
         options = ['Sales', 'Support', 'Partnership', 'Other'] }}]\n{toml}"
    );
    Config::parse(&text).unwrap().forms["contact"].routes.clone()
}

const SUPPORT_AND_SALES: &str = r#"
[[forms.contact.routes]]
name = "support"
when = { topic = ["Support", "Partnership"] }
notify = ["support@example.com"]
effects = ["owner_notification"]

[[forms.contact.routes]]
name = "sales"
when = { topic = "Sales" }
notify = ["sales-team@example.com"]
"#;

async fn routed_app(backend: Backend) -> DeliveryApp {
    spawn_delivery_app(backend, |c| c.forms.get_mut("contact").unwrap().routes = routes(SUPPORT_AND_SALES))
        .await
}

fn question(topic: &str, mark: &str) -> Value {
    json!({"name": "Ada Lovelace", "email": "ada@example.com", "topic": topic, "message": format!("{mark} please")})
}

fn mail_to(d: &DeliveryApp, to: &str) -> Vec<String> {
    d.smtp.messages().into_iter().filter(|m| m.contains(&format!("\nTo: {to}\r\n"))).collect()
}

fn kinds(body: &Value) -> Vec<&str> {
    body["effects"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

async fn a_support_question_reaches_only_support_and_a_sales_question_only_sales(backend: Backend) {
    let d = routed_app(backend).await;
    let support = d.app.submit(&new_key(), &question("Support", "SUPPORT-MARK")).await;
    assert_eq!(support.status(), 201);
    let support: Value = support.json().await.unwrap();
    assert_eq!(support["route"], "support");
    assert_eq!(kinds(&support), ["owner_notification"], "the route's effects replace the form's");
    let sales: Value = d.app.submit(&new_key(), &question("Sales", "SALES-MARK")).await.json().await.unwrap();
    assert_eq!(sales["route"], "sales");
    assert_eq!(kinds(&sales), ["crm_lead", "confirmation_email", "owner_notification"]);
    // No route holds: the form's effects and recipients, and no `route` in the answer.
    let other: Value = d.app.submit(&new_key(), &question("Other", "OTHER-MARK")).await.json().await.unwrap();
    assert!(other.get("route").is_none(), "{other}");
    assert_eq!(kinds(&other), ["crm_lead", "confirmation_email", "owner_notification"]);
    d.settle(&d.worker()).await;

    let to_support = mail_to(&d, "support@example.com");
    assert_eq!(to_support.len(), 1, "one notification to support");
    assert!(to_support[0].contains("SUPPORT-MARK"), "{}", to_support[0]);
    let to_sales_team = mail_to(&d, "sales-team@example.com");
    assert_eq!(to_sales_team.len(), 1, "one notification to the sales team");
    assert!(to_sales_team[0].contains("SALES-MARK"), "{}", to_sales_team[0]);
    let to_form = mail_to(&d, "sales@example.com");
    assert_eq!(to_form.len(), 1, "only the unrouted question reaches the form's notify");
    assert!(to_form[0].contains("OTHER-MARK"), "{}", to_form[0]);
    // The support route has no confirmation: one to the visitor, for each of the other two.
    assert_eq!(mail_to(&d, "ada@example.com").len(), 1, "the cap lets the first confirmation through");

    // The admin shows the route.
    let session = d.app.sign_in(Role::Viewer).await;
    let id = support["submission_id"].as_str().unwrap();
    let html =
        d.app.admin_get(Some(&session), &format!("/admin/submissions/{id}")).await.text().await.unwrap();
    assert!(html.contains("<dd id=\"route\">support</dd>"), "{html}");
}

async fn a_replay_after_the_routes_change_answers_the_same_body(backend: Backend) {
    let d = routed_app(backend).await;
    let key = new_key();
    let first = d.app.submit(&key, &question("Support", "FIRST")).await;
    assert_eq!(first.status(), 201);
    let first = first.text().await.unwrap();
    assert!(first.contains("\"route\":\"support\""), "{first}");

    // The routes change: support is renamed and no longer replaces the effects.
    let mut config = (*d.app.config).clone();
    config.forms.get_mut("contact").unwrap().routes = routes(
        "[[forms.contact.routes]]\nname = \"helpdesk\"\nwhen = { topic = \"Support\" }\n\
         notify = [\"helpdesk@example.com\"]\n",
    );
    d.app.forms.put(config);

    let replay = d.app.submit(&key, &question("Support", "FIRST")).await;
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.text().await.unwrap(), first, "the stored answer, route and effects as they were");
    let fresh: Value = d.app.submit(&new_key(), &question("Support", "SECOND")).await.json().await.unwrap();
    assert_eq!(fresh["route"], "helpdesk", "a new submission takes the routes in force");
}

/// A route may send to a chat the form itself does not list: the worker still finds the
/// kind's settings (the form's table), and the message goes out once.
async fn a_route_may_send_to_a_chat_the_form_does_not_list(backend: Backend) {
    let discord = crate::support::discord::FakeDiscord::start().await;
    let var = crate::support::chat::env_var(&discord.webhook_url());
    let table = format!("url_env = \"{var}\"");
    let d = crate::support::chat::chat_app(backend, "discord", &table, |c| {
        let contact = c.forms.get_mut("contact").unwrap();
        contact.effects = vec![onceform::domain::EffectKind::OWNER_NOTIFICATION];
        contact.routes = routes(
            "[[forms.contact.routes]]\nname = \"support\"\nwhen = { topic = \"Support\" }\neffects = [\"discord\"]\n",
        );
    })
    .await;
    let key = new_key();
    let answer: Value = d.app.submit(&key, &question("Support", "CHAT-MARK")).await.json().await.unwrap();
    assert_eq!((answer["route"].as_str(), kinds(&answer)), (Some("support"), vec!["discord"]));
    d.settle(&d.worker()).await;
    assert_eq!(discord.posted().len(), 1, "{:?}", discord.refused());
    assert_eq!(d.effect(&key, "discord").await.state.as_str(), "SENT");
}

/// A support question caught as spam (the honeypot filled) gets no effects; released by an
/// admin, it is judged again as a real inquiry: it takes the support route, its effects and
/// its recipients, not the form's.
async fn released_spam_takes_the_route_it_matches_as_a_real_inquiry(backend: Backend) {
    let d = routed_app(backend).await;
    let mut body = question("Support", "RELEASED-MARK");
    body["website"] = "http://spam.example".into();
    let answer: Value = d.app.submit(&new_key(), &body).await.json().await.unwrap();
    let id = answer["submission_id"].as_str().unwrap().to_string();
    assert_eq!(d.app.stats().await.effects_total(), 0, "spam gets no effects");
    let admin = d.app.sign_in(Role::Admin).await;
    let path = format!("/admin/submissions/{id}/release");
    assert_eq!(
        d.app.admin_post(Some(&admin), &path, Some(&admin.csrf), &[("note", "a customer")]).await.status(),
        303
    );
    d.settle(&d.worker()).await;
    let to_support = mail_to(&d, "support@example.com");
    assert_eq!(to_support.len(), 1, "the support route's recipients");
    assert!(to_support[0].contains("RELEASED-MARK"), "{}", to_support[0]);
    assert!(mail_to(&d, "sales@example.com").is_empty(), "not the form's recipients");
    assert_eq!(d.app.stats().await.effects_total(), 1, "the route's effects only (owner_notification)");
    let page = d.app.admin_get(Some(&admin), &format!("/admin/submissions/{id}")).await.text().await.unwrap();
    assert!(page.contains("support"), "the route shown: {page}");
}
