//! A labelled corpus of inquiries, generated from a seed: people writing in Traditional
//! Chinese (Taiwanese numbers) or English (US numbers), each with one or more requests,
//! some sent again with small edits, another phone format, another address case, a +tag,
//! a full-width phone, their other address, or a "the first one failed" note. Hard
//! negatives: the same sender's other request the same day (another product or quantity,
//! often the same wording), colleagues sharing a company switchboard, generic messages
//! ("please send a price list") from different people, and namesakes.

use fastrand::Rng;

/// One row, with its truth.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: String,
    pub email: String,
    pub phone: String,
    pub company: String,
    pub topic: &'static str,
    pub message: String,
    /// Seconds after the corpus's start.
    pub at: i64,
    pub person: usize,
    pub request: usize,
    /// Not the first row of its request.
    pub repeat: bool,
}

const ZH_SURNAMES: &[&str] = &[
    "陳", "林", "黃", "張", "李", "王", "吳", "劉", "蔡", "楊", "許", "鄭", "謝", "洪", "郭", "邱", "曾",
    "廖", "賴", "徐",
];
const ZH_GIVEN: &[&str] = &[
    "怡君", "雅婷", "志明", "俊傑", "淑芬", "美玲", "家豪", "冠宇", "宗翰", "佳穎", "詩涵", "承恩", "建宏",
    "惠雯", "育誠", "欣怡", "柏翰", "思妤", "文華", "玉珍",
];
const ZH_ROMAN: &[&str] = &[
    "chen", "lin", "huang", "chang", "lee", "wang", "wu", "liu", "tsai", "yang", "hsu", "cheng", "hsieh",
    "hung", "kuo", "chiu", "tseng", "liao", "lai", "hsu",
];
const ZH_COMPANY: &[&str] = &[
    "台灣精密",
    "永豐電子",
    "新光機械",
    "大同光電",
    "宏達工業",
    "全興科技",
    "聯華材料",
    "東元自動化",
    "中華包裝",
    "華碩物流",
    "長興化工",
    "友達塑膠",
];
const ZH_FORMS: &[&str] = &["股份有限公司", "有限公司", "公司", "股份有限公司"];
const EN_FIRST: &[&str] = &[
    "James",
    "Mary",
    "John",
    "Patricia",
    "Robert",
    "Jennifer",
    "Michael",
    "Linda",
    "David",
    "Elizabeth",
    "William",
    "Susan",
    "Richard",
    "Jessica",
    "Joseph",
    "Sarah",
    "Thomas",
    "Karen",
    "Daniel",
    "Nancy",
];
const EN_LAST: &[&str] = &[
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Wilson",
    "Anderson",
    "Taylor",
    "Thomas",
    "Moore",
    "Jackson",
    "Martin",
    "Lee",
    "Thompson",
    "White",
];
const EN_COMPANY: &[&str] = &[
    "Acme Tooling",
    "Northwind Traders",
    "Blue Harbor Logistics",
    "Summit Fabrication",
    "Redwood Robotics",
    "Granite Supply",
    "Lakeside Plastics",
    "Pioneer Circuits",
    "Silverline Packaging",
    "Cobalt Devices",
    "Evergreen Labs",
    "Ironclad Motors",
];
const EN_FORMS: &[&str] = &["Inc.", "LLC", "Ltd", "Co.", "Corp.", "Inc"];
const US_AREAS: &[&str] =
    &["212", "415", "646", "312", "617", "206", "303", "512", "713", "305", "408", "510"];
const PRODUCTS: &[&str] = &[
    "X200", "A-17", "RT-AX88U", "M5-Pro", "ZX-9", "K-300", "T8", "P-450", "HX-12", "B-220", "Q7", "LM-60",
    "C-3000", "V90", "S-15", "DX-5",
];
const DOMAINS: &[&str] = &["gmail.com", "yahoo.com.tw", "outlook.com", "hotmail.com", "gmail.com"];

#[derive(Clone)]
struct Person {
    zh: bool,
    name: String,
    email: String,
    other_email: String,
    phone_digits: String,
    company: String,
}

fn pick<'a>(rng: &mut Rng, list: &[&'a str]) -> &'a str {
    list[rng.usize(..list.len())]
}

fn person(rng: &mut Rng, zh: bool, switchboard: Option<(&str, &str)>) -> Person {
    let handle_n = rng.u32(1..999);
    if zh {
        let (s, g) = (rng.usize(..ZH_SURNAMES.len()), pick(rng, ZH_GIVEN));
        let name = format!("{}{g}", ZH_SURNAMES[s]);
        let roman = ZH_ROMAN[s];
        let company = switchboard.map_or_else(
            || match rng.u8(..10) {
                0..=6 => format!("{}{}", pick(rng, ZH_COMPANY), pick(rng, ZH_FORMS)),
                _ => String::new(),
            },
            |(c, _)| c.to_string(),
        );
        let given: String = format!(
            "{}{}",
            pick(rng, &["mei", "yi", "chih", "chun", "shu", "chia", "tsung", "pei"]),
            pick(rng, &["ling", "chun", "hao", "ting", "yu", "han", "wen"])
        );
        let email = format!("{given}.{roman}{handle_n}@{}", pick(rng, DOMAINS));
        let other_email = format!("{roman}.{given}@work{handle_n}.com.tw");
        let phone_digits = switchboard.map_or_else(
            || match rng.u8(..10) {
                0..=7 => format!("09{:08}", rng.u32(10_000_000..99_999_999)),
                _ => format!("02{:08}", rng.u32(20_000_000..29_999_999)),
            },
            |(_, p)| p.to_string(),
        );
        Person { zh, name, email, other_email, phone_digits, company }
    } else {
        let (f, l) = (pick(rng, EN_FIRST), pick(rng, EN_LAST));
        let company = switchboard.map_or_else(
            || match rng.u8(..10) {
                0..=6 => format!("{} {}", pick(rng, EN_COMPANY), pick(rng, EN_FORMS)),
                _ => String::new(),
            },
            |(c, _)| c.to_string(),
        );
        let email = format!(
            "{}.{}{handle_n}@{}",
            f.to_lowercase(),
            l.to_lowercase(),
            pick(rng, &["gmail.com", "outlook.com", "yahoo.com", "icloud.com"])
        );
        let other_email = format!("{}{}@work{handle_n}.com", &f[..1].to_lowercase(), l.to_lowercase());
        let phone_digits = switchboard.map_or_else(
            || {
                format!(
                    "{}{}{:02}{:04}",
                    pick(rng, US_AREAS),
                    rng.u8(2..10),
                    rng.u8(0..100),
                    rng.u16(0..10000)
                )
            },
            |(_, p)| p.to_string(),
        );
        Person { zh, name: format!("{f} {l}"), email, other_email, phone_digits, company }
    }
}

/// The phone as one person may type it.
fn phone_typed(rng: &mut Rng, p: &Person) -> String {
    let d = &p.phone_digits;
    if p.zh {
        let national = &d[1..]; // without the trunk 0
        match rng.u8(..7) {
            0 if d.starts_with("09") => format!("{}-{}-{}", &d[..4], &d[4..7], &d[7..]),
            0 => format!("({}) {}-{}", &d[..2], &d[2..6], &d[6..]),
            1 => d.clone(),
            2 if d.starts_with("09") => {
                format!("+886 {} {} {}", &national[..3], &national[3..6], &national[6..])
            }
            2 => format!("+886-{}-{}-{}", &national[..1], &national[1..5], &national[5..]),
            3 => full_width(d),
            4 => format!("+886{national}"),
            5 if d.starts_with("09") => format!("{} {} {}", &d[..4], &d[4..7], &d[7..]),
            _ => format!("{}-{}", &d[..d.len() - 4], &d[d.len() - 4..]),
        }
    } else {
        match rng.u8(..6) {
            0 => format!("({}) {}-{}", &d[..3], &d[3..6], &d[6..]),
            1 => format!("{}-{}-{}", &d[..3], &d[3..6], &d[6..]),
            2 => format!("+1 {} {} {}", &d[..3], &d[3..6], &d[6..]),
            3 => format!("{}.{}.{}", &d[..3], &d[3..6], &d[6..]),
            4 => d.clone(),
            _ => format!("1-{}-{}-{}", &d[..3], &d[3..6], &d[6..]),
        }
    }
}

fn full_width(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '0'..='9' | 'a'..='z' | 'A'..='Z' | '@' | '+' | '.' | '-' => {
                char::from_u32(c as u32 + 0xfee0).unwrap_or(c)
            }
            c => c,
        })
        .collect()
}

/// The address as typed this time: the same, another case, a +tag, dots, full width.
fn email_typed(rng: &mut Rng, email: &str) -> String {
    let (local, domain) = email.split_once('@').unwrap();
    match rng.u8(..10) {
        0 => email.to_uppercase(),
        1 => format!("{}{}@{domain}", &local[..1].to_uppercase(), &local[1..]),
        2 => format!("{local}+quote@{domain}"),
        3 if domain == "gmail.com" => format!("{}@{domain}", local.replace('.', "")),
        4 => full_width(email),
        _ => email.to_string(),
    }
}

#[derive(Clone, Copy)]
struct Request {
    topic: &'static str,
    product: Option<&'static str>,
    quantity: u32,
    template: usize,
    generic: bool,
}

fn message(rng: &mut Rng, zh: bool, r: &Request) -> String {
    let (p, q) = (r.product.unwrap_or(""), r.quantity);
    if r.template >= 5 {
        // A question without product or number: the same sender's other request.
        let zh_q = [
            "請問你們有提供到府安裝服務嗎？",
            "想了解貴公司的保固條款與維修流程。",
            "請問可以開立統一發票並分期付款嗎？",
            "我們想參觀工廠，請問需要預約嗎？",
        ];
        let en_q = [
            "Do you offer on-site installation?",
            "Could you explain your warranty terms and the repair process?",
            "Can we pay in instalments with a purchase order?",
            "We would like to visit your factory. Do we need an appointment?",
        ];
        return match zh {
            true => zh_q[(r.template - 5) % zh_q.len()].into(),
            false => en_q[(r.template - 5) % en_q.len()].into(),
        };
    }
    if r.generic {
        return match zh {
            true => pick(
                rng,
                &["請提供價目表，謝謝。", "您好，麻煩寄一份產品型錄和價目表給我。", "請提供最新價目表。"],
            )
            .into(),
            false => pick(
                rng,
                &[
                    "Please send a price list.",
                    "Hi, could you send me your catalogue and price list?",
                    "Please send your latest price list.",
                ],
            )
            .into(),
        };
    }
    let zh_t = [
        format!("您好，我們想詢問{p}的報價，數量大約{q}台，請問交期多久？謝謝。"),
        format!("你好，公司需要採購{p}共{q}個，想了解價格與付款方式。"),
        format!("請問{p}是否有現貨？我們需要{q}組，希望下個月到貨。"),
        format!("我們的{p}出現異常，開機後無法連線，已經重新啟動過，請協助處理。"),
        format!("想洽談{p}的代理合作，預計每季採購{q}台，請與我聯繫。"),
    ];
    let en_t = [
        format!("Hello, we would like a quote for {q} units of the {p}. What is the lead time? Thanks."),
        format!("Hi, our company needs {q} pcs of {p}. Could you share pricing and payment terms?"),
        format!("Is the {p} in stock? We need {q} sets delivered next month."),
        format!("Our {p} stopped connecting after the last update. We already restarted it, please help."),
        format!(
            "We are interested in distributing the {p}, about {q} units per quarter. Please get in touch."
        ),
    ];
    match zh {
        true => zh_t[r.template % zh_t.len()].clone(),
        false => en_t[r.template % en_t.len()].clone(),
    }
}

/// A repeat's text: the same request retyped with small edits (the product code written
/// another way too), or written anew in other words, maybe with a note.
fn retyped(rng: &mut Rng, zh: bool, text: &str, r: &Request) -> String {
    let mut t = text.to_string();
    if rng.u8(..5) == 0 && r.product.is_some() && !r.generic && matches!(r.template, 0 | 1 | 2 | 4) {
        // Written anew: another wording of the same product and quantity.
        let other = Request { template: [0, 1, 2, 4][rng.usize(..4)], generic: false, ..*r };
        t = message(rng, zh, &other);
    }
    if let (Some(p), 0) = (r.product, rng.u8(..4)) {
        let variant = match rng.u8(..3) {
            0 => p.to_lowercase(),
            1 => p.replace('-', ""),
            _ => match (p.contains('-'), p.find(|c: char| c.is_ascii_digit())) {
                (false, Some(i)) if i > 0 => format!("{}-{}", &p[..i], &p[i..]),
                _ => p.to_string(),
            },
        };
        t = t.replacen(p, &variant, 1);
    }
    let swaps: &[(&str, &str)] = match zh {
        true => &[
            ("您好", "你好"),
            ("謝謝", "感謝"),
            ("請問", "想請問"),
            ("大約", "約"),
            ("，", " "),
            ("。", "！"),
            ("我們", "我司"),
        ],
        false => &[
            ("Hello", "Hi"),
            ("Thanks", "Thank you"),
            ("we would like", "I'd like"),
            (" the ", " "),
            ("Could you", "Can you"),
            (".", "!"),
            ("please", "pls"),
        ],
    };
    for (a, b) in swaps {
        if rng.u8(..3) == 0 {
            t = t.replacen(a, b, 1);
        }
    }
    if rng.u8(..4) == 0 && t.chars().count() > 12 {
        let cut = t.char_indices().rev().nth(rng.usize(1..4)).map_or(t.len(), |(i, _)| i);
        t.truncate(cut);
    }
    match (rng.u8(..3), zh) {
        (0, true) => format!(
            "{} {t}",
            pick(rng, &["上一封好像沒送出，再寄一次。", "抱歉重複寄送，", "剛剛送出失敗，重新填寫："])
        ),
        (0, false) => format!(
            "{} {t}",
            pick(
                rng,
                &[
                    "Resending, the first one failed.",
                    "Sorry if this is a duplicate -",
                    "Not sure my last message went through."
                ]
            )
        ),
        _ => t,
    }
}

fn new_request(rng: &mut Rng, generic_share: u8) -> Request {
    let generic = rng.u8(..100) < generic_share;
    let template = rng.usize(..5);
    Request {
        topic: match template {
            3 => "Support",
            4 => "Partnership",
            _ => {
                if rng.u8(..6) == 0 {
                    "Other"
                } else {
                    "Sales"
                }
            }
        },
        product: (!generic).then(|| pick(rng, PRODUCTS)),
        quantity: [10, 20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250, 300, 500][rng.usize(..15)],
        template,
        generic,
    }
}

/// `people` senders (about half writing Chinese), from `seed`.
pub fn generate(seed: u64, people: usize) -> Vec<Row> {
    let mut rng = Rng::with_seed(seed);
    let mut rows = Vec::new();
    let mut persons: Vec<Person> = Vec::new();
    while persons.len() < people {
        let zh = rng.bool();
        // A few companies whose colleagues all give the switchboard number.
        if rng.u8(..12) == 0 {
            let seedp = person(&mut rng, zh, None);
            let company = if zh {
                format!("{}{}", pick(&mut rng, ZH_COMPANY), "股份有限公司")
            } else {
                format!("{} Inc.", pick(&mut rng, EN_COMPANY))
            };
            for _ in 0..rng.usize(2..4) {
                persons.push(person(&mut rng, zh, Some((&company, &seedp.phone_digits))));
            }
        } else {
            persons.push(person(&mut rng, zh, None));
        }
    }
    persons.truncate(people);
    let span = 30 * 86_400i64;
    let mut request_id = 0;
    for (pid, p) in persons.iter().enumerate() {
        let mut at = rng.i64(0..span);
        let n_requests = match rng.u8(..10) {
            0..=5 => 1,
            6..=8 => 2,
            _ => 3,
        };
        let mut first: Option<Request> = None;
        let mut products: Vec<&str> = Vec::new();
        let mut quantities: Vec<u32> = Vec::new();
        for k in 0..n_requests {
            // A later request of one sender is another one: never the same generic line or product.
            let mut r = new_request(&mut rng, if k == 0 { 8 } else { 0 });
            if k > 0 && rng.u8(..4) == 0 {
                r.template = 5 + k; // a question without product or number, often the same topic
                r.product = None;
            }
            while k > 0 && r.product.is_some_and(|p| products.contains(&p)) {
                r.product = Some(pick(&mut rng, PRODUCTS));
            }
            // The same sender's other request, often the same day and the same wording.
            if let (Some(f), true) = (&first, r.template < 5 && rng.bool()) {
                r.template = f.template;
                r.topic = f.topic;
                r.generic = false;
                if r.product.is_none() {
                    r.product = Some(pick(&mut rng, PRODUCTS));
                }
                // Another quantity of the same product (where the wording has a quantity).
                if rng.u8(..3) == 0 && r.template != 3 && f.product.is_some() {
                    r.product = f.product; // another quantity of the same product
                    while quantities.contains(&r.quantity) {
                        r.quantity += 5 * rng.u32(1..20);
                    }
                } else {
                    while r.product.is_none_or(|p| products.contains(&p)) {
                        r.product = Some(pick(&mut rng, PRODUCTS));
                    }
                }
            }
            products.extend(r.product);
            quantities.push(r.quantity);
            if k > 0 {
                at += rng.i64(1800..(36 * 3600));
            }
            let text = message(&mut rng, p.zh, &r);
            let email = email_typed(&mut rng, &p.email);
            let repeats = match rng.u8(..20) {
                0..=10 => 0,
                11..=16 => 1,
                17..=18 => 2,
                _ => 3,
            };
            let with_phone = rng.u8(..10) < 8;
            rows.push(Row {
                name: p.name.clone(),
                email,
                phone: if with_phone { phone_typed(&mut rng, p) } else { String::new() },
                company: p.company.clone(),
                topic: r.topic,
                message: text.clone(),
                at,
                person: pid,
                request: request_id,
                repeat: false,
            });
            let mut rat = at;
            for _ in 0..repeats {
                rat += rng.i64(60..(30 * 3600));
                // Their other address, with the phone they gave the first time.
                let other_address = with_phone && rng.u8(..8) == 0;
                let name = match (rng.u8(..8), p.zh) {
                    (0, true) => format!("{} {}", &p.name[..3], &p.name[3..]),
                    (0, false) => p.name.split(' ').rev().collect::<Vec<_>>().join(" "),
                    (1, _) => p.name.to_uppercase(),
                    (2, false) => p.name.replacen("nn", "n", 1).replacen("ll", "l", 1).replacen("ss", "s", 1),
                    _ => p.name.clone(),
                };
                rows.push(Row {
                    name,
                    email: if other_address {
                        p.other_email.clone()
                    } else {
                        email_typed(&mut rng, &p.email)
                    },
                    // With the other address the phone is given: that is how they are one sender.
                    phone: if other_address || rng.u8(..10) < 8 {
                        phone_typed(&mut rng, p)
                    } else {
                        String::new()
                    },
                    company: p.company.clone(),
                    topic: r.topic,
                    message: retyped(&mut rng, p.zh, &text, &r),
                    at: rat,
                    person: pid,
                    request: request_id,
                    repeat: true,
                });
            }
            request_id += 1;
            first.get_or_insert(r);
        }
    }
    rows.sort_by_key(|r| r.at);
    // Unique times: the benchmark maps stored submissions back to rows by them.
    for i in 1..rows.len() {
        if rows[i].at <= rows[i - 1].at {
            rows[i].at = rows[i - 1].at + 1;
        }
    }
    rows
}

fn csv_field(v: &str) -> String {
    format!("\"{}\"", v.replace('"', "\"\""))
}

/// The import file (`received_at` from `start`; `source_id`: the row's index) the product reads.
pub fn to_csv(rows: &[Row], start: chrono::NaiveDateTime) -> String {
    let mut out = String::from("name,email,phone,company,topic,message,received_at,source_id\n");
    for (i, r) in rows.iter().enumerate() {
        let at = (start + chrono::Duration::seconds(r.at)).format("%Y-%m-%d %H:%M:%S").to_string();
        let id = i.to_string();
        let fields = [&r.name, &r.email, &r.phone, &r.company, r.topic, &r.message, &at, &id];
        out.push_str(&fields.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

/// The truth beside it: the row's line's person, request and whether it repeats.
pub fn labels_csv(rows: &[Row]) -> String {
    let mut out = String::from("row,person,request,repeat\n");
    for (i, r) in rows.iter().enumerate() {
        out.push_str(&format!("{i},{},{},{}\n", r.person, r.request, r.repeat));
    }
    out
}

/// RFC 4180 records of `text` (quoted fields may hold commas, quotes and line breaks).
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), String::new());
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// A corpus from elsewhere: its CSV (a header of form fields, `received_at`, optional
/// `source_id`) and labels (`row` or `source_id`, `request`, `person`; `repeat` optional).
/// Returns the import file (with `source_id` = row index), the truth, and the form's TOML
/// (a field per column: email, phone, message/body textarea, topic select, others text).
pub fn external(csv: &str, labels: &str) -> (String, Vec<Row>, String) {
    let records = parse_csv(csv);
    let header = records[0].clone();
    let col = |name: &str| header.iter().position(|h| h.trim() == name);
    let (at_col, id_col) = (col("received_at"), col("source_id"));
    let labels = parse_csv(labels);
    let lh = &labels[0];
    let lcol = |name: &str| lh.iter().position(|h| h.trim() == name);
    let key = lcol("row").or_else(|| lcol("source_id")).expect("labels need a row or source_id column");
    let (req, per, rep) = (
        lcol("request").expect("labels need request"),
        lcol("person").expect("labels need person"),
        lcol("repeat"),
    );
    let mut truth = std::collections::HashMap::new();
    for l in &labels[1..] {
        if l.len() > key {
            truth.insert(
                l[key].trim().to_string(),
                (l[req].clone(), l[per].clone(), rep.map(|r| l[r].trim() == "true" || l[r].trim() == "1")),
            );
        }
    }
    let ids = |s: &str, seen: &mut Vec<String>| match seen.iter().position(|x| x == s) {
        Some(i) => i,
        None => {
            seen.push(s.to_string());
            seen.len() - 1
        }
    };
    let (mut requests, mut persons) = (Vec::new(), Vec::new());
    let mut rows = Vec::new();
    let mut out =
        header.iter().filter(|h| h.trim() != "source_id").map(|h| csv_field(h)).collect::<Vec<_>>().join(",");
    out.push_str(",source_id\n");
    for (i, r) in records[1..].iter().enumerate().filter(|(_, r)| r.len() == header.len()) {
        let label_key = id_col.map_or_else(|| i.to_string(), |c| r[c].trim().to_string());
        let Some((request, person, repeat)) = truth.get(&label_key) else { continue };
        let at = at_col
            .and_then(|c| {
                chrono::NaiveDateTime::parse_from_str(r[c].trim(), "%Y-%m-%d %H:%M:%S")
                    .ok()
                    .or_else(|| chrono::DateTime::parse_from_rfc3339(r[c].trim()).ok().map(|t| t.naive_utc()))
            })
            .map_or(i as i64, |t| t.and_utc().timestamp());
        let values: Vec<String> =
            r.iter().enumerate().filter(|(c, _)| Some(*c) != id_col).map(|(_, v)| csv_field(v)).collect();
        out.push_str(&format!("{},{}\n", values.join(","), rows.len()));
        rows.push(Row {
            name: String::new(),
            email: String::new(),
            phone: String::new(),
            company: String::new(),
            topic: "",
            message: String::new(),
            at,
            person: ids(person, &mut persons),
            request: ids(request, &mut requests),
            repeat: repeat.unwrap_or(false),
        });
    }
    if rep.is_none() {
        // Not labelled: a repeat is any row of a request but its earliest.
        let first: Vec<(i64, usize)> = (0..rows.len()).map(|i| (rows[i].at, i)).collect();
        for i in 0..rows.len() {
            rows[i].repeat =
                (0..rows.len()).any(|j| rows[j].request == rows[i].request && first[j] < first[i]);
        }
    }
    let mut form = String::from("[forms.inquiry]\ntitle = \"Inquiry\"\neffects = []\ndefault_region = \"TW\"\n\n[forms.inquiry.duplicates]\nwindow_hours = 72\nhold_score = 0.8\nother_regions = [\"US\"]\n");
    for (c, h) in header.iter().enumerate().filter(|(c, _)| Some(*c) != at_col && Some(*c) != id_col) {
        let h = h.trim();
        let kind = match h {
            "email" | "e-mail" | "mail" => "email",
            "phone" | "tel" | "telephone" | "mobile" => "phone",
            "message" | "body" | "comments" | "inquiry" | "text" => "textarea",
            "topic" | "category" | "subject_type" => "select",
            _ => "text",
        };
        form.push_str(&format!(
            "\n[[forms.inquiry.fields]]\nname = {h:?}\ntype = \"{kind}\"\nmax_length = 5000\n"
        ));
        if kind == "select" {
            let mut options: Vec<&str> = records[1..]
                .iter()
                .filter_map(|r| r.get(c))
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
                .collect();
            options.sort();
            options.dedup();
            form.push_str(&format!("options = {options:?}\n"));
        }
    }
    (out, rows, form)
}
