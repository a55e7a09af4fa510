"""An everyday memory, written for the tests: a Claude.ai export of one person's long, unrelated
conversations, the facts they stated, and the questions they ask of it in many phrasings.

Issue 41's case: a stated fact ("The user moved to Porto in June 2025.") among conversations
that happen to use the question's filler words ("But now sum() also drops my 'date' column")
or speak of a home without naming it ("Our flat has thick stone walls"). Nothing here is
copied from a benchmark or from anyone's files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# (title, date, [(human, assistant), ...]): long conversations about anything but the facts.
SOURDOUGH = ("Sourdough that will not rise", "2025-02-08", [
    ("My sourdough starter doubled last week but now it barely rises. I feed it 1:1:1 with rye and white flour. "
     "What am I doing wrong?",
     "A starter that slows down after a good week is usually cold or underfed. Try a 1:2:2 feed so it has more "
     "fresh flour to eat, keep it somewhere around 24 to 26 degrees, and watch for the peak: it should double in "
     "four to six hours."),
    ("The kitchen is cold at the moment, maybe 18 degrees. Should I put it in the oven with the light on?",
     "The oven with only the light on works well for many people: it usually sits around 26 to 28 degrees. Leave "
     "the door ajar if it gets warmer than that, and put a note on the oven so nobody preheats it with the jar "
     "inside."),
    ("How do I know when the bulk fermentation is done? My loaves come out dense and flat.",
     "Look for a dough that has grown by about half, feels airy and jiggles when you shake the bowl, with bubbles "
     "on the sides and the top. Dense, flat loaves usually mean an under-fermented dough, or a shaping that did "
     "not build enough tension."),
    ("I do four sets of stretch and folds. Is that enough?",
     "Four sets in the first two hours is plenty for most doughs. After that leave it alone and let fermentation "
     "do the rest; more folding at the end tears the gluten you built."),
    ("What hydration should I use with 20 percent whole wheat?",
     "Start at 72 to 75 percent. Whole wheat drinks more water than white flour, but a beginner's dough at 80 "
     "percent is hard to shape. Raise it a few points at a time once shaping feels easy."),
    ("Do I need a Dutch oven or can I use a baking stone?",
     "A Dutch oven traps the steam the loaf releases, which keeps the crust soft long enough for a good rise. "
     "With a stone, put a tray of boiling water below it for the first twenty minutes."),
    ("My crust is pale even after 45 minutes.",
     "Take the lid off after 20 minutes and bake until it is a deep brown, often 25 more minutes. A little "
     "malt or a longer cold proof in the fridge also gives more colour, because the sugars have time to form."),
    ("Thanks. Last question: how long can the starter stay in the fridge between bakes?",
     "A week or two is fine. Take it out the day before you bake and give it two feeds at room temperature "
     "before you use it."),
])

PANDAS = ("pandas KeyError after groupby", "2025-03-14", [
    ("I get KeyError: 'date' after df.groupby('customer').sum(). The column is definitely there before.",
     "After a groupby the grouping column becomes the index, and sum() drops columns it cannot add. Use "
     "groupby('customer', as_index=False) or reset_index() afterwards, and check df.columns after each step."),
    ("I added as_index=False. But now sum() also drops my 'date' column and I still need it.",
     "sum() cannot add dates, so pandas leaves them out. Tell it what to do per column with agg: "
     "df.groupby('customer', as_index=False).agg(total=('amount', 'sum'), last=('date', 'max'))."),
    ("That works. Can I keep every row instead and add the total next to it?",
     "Yes: df['total'] = df.groupby('customer')['amount'].transform('sum') keeps every row and puts each "
     "customer's total beside it."),
    ("The amounts are strings like '1.234,50' because the file is from a European system.",
     "Read it with pd.read_csv(path, decimal=',', thousands='.') so the amounts arrive as floats. Converting "
     "after the fact with str.replace works too, but the reader's options are safer."),
    ("And the dates are day first. to_datetime gets some of them wrong.",
     "Pass dayfirst=True, or better the exact format: pd.to_datetime(df['date'], format='%d/%m/%Y'). A format "
     "raises on a bad row instead of silently swapping day and month."),
    ("Is there a way to see which rows failed?",
     "Use errors='coerce' and then look at df[df['date'].isna()]: those are the rows the format did not "
     "match. Fix them at the source if you can."),
    ("Great. How do I write the result to Excel with the totals in bold?",
     "Write it with df.to_excel through an ExcelWriter using the openpyxl engine, then set the font of the "
     "total column's cells to bold on the worksheet before you save."),
])

JAPAN = ("Two weeks in Japan in autumn", "2025-04-02", [
    ("I'm planning two weeks in Japan in November. Tokyo, Kyoto, and something less touristy. Ideas?",
     "November is a lovely time: autumn leaves in Kyoto peak in the second half of the month. For something "
     "quieter, Kanazawa has a fine garden and old districts, and the Kiso valley has walkable post towns."),
    ("Is the JR Pass still worth it?",
     "After the 2023 price rise it rarely pays off for Tokyo, Kyoto and back. Price your actual trips with "
     "single tickets; a regional pass for the Hokuriku area may be the better deal."),
    ("How many nights in Kyoto?",
     "Four nights lets you see the big temples early in the morning, before the crowds, and keep one day for "
     "Nara or Uji."),
    ("What should I book in advance?",
     "The Ghibli Museum, any popular kaiseki restaurant, and a ryokan with its own hot spring. Temples need no "
     "booking, but some gardens in Kyoto take reservations in the leaf season."),
    ("Do I need cash?",
     "Less than before, but small restaurants, shrines and rural buses often take cash only. Carry some yen "
     "and an IC card like Suica for trains and convenience stores."),
    ("What's a good walk in the Kiso valley?",
     "The old Nakasendo road from Magome to Tsumago is about 8 km, mostly downhill in that direction, through "
     "forest and past a waterfall. Send your bags ahead with the luggage service."),
    ("And the weather in late November?",
     "Cool and mostly dry: around 10 to 15 degrees in the day in Kyoto, colder in the mountains. Pack layers "
     "and shoes you can slip off, since you will take them off often."),
])

NETWORK = ("Wi-Fi dead spots in the flat", "2025-09-10", [
    ("The Wi-Fi in the bedroom drops all the time. Our flat has thick stone walls and the router is in the "
     "hall.",
     "Stone walls absorb a lot of the 5 GHz signal. A mesh system with a node in the bedroom doorway, or a "
     "wired access point if you can run a cable, will help far more than a stronger router."),
    ("Could I use the powerline adapters I already have?",
     "Yes, powerline is worth a try in an old building: plug one next to the router and one in the bedroom, "
     "directly into the wall, not into a power strip."),
    ("The speed test shows 40 Mbps in the bedroom and 300 next to the router.",
     "That gap is typical for walls like yours. If the powerline adapter gives you over 100 in the bedroom, "
     "use it as an access point there and set the same network name and password."),
    ("Should both access points use the same channel?",
     "No: on 2.4 GHz give them different channels among 1, 6 and 11 so they do not interfere. On 5 GHz pick "
     "channels far apart too."),
    ("My phone sticks to the weak router even in the bedroom.",
     "Phones hold on to a network until it is very weak. Lower the router's transmit power a little, or turn "
     "on band steering or fast roaming if the access points support it."),
    ("Is it safe to leave WPS on?",
     "Turn WPS off: its PIN method can be broken. Use WPA2 or WPA3 with a long password instead."),
])

RUNNING = ("Training for a 10k", "2025-05-20", [
    ("I run three times a week, about 5 km each time, and want to do a 10k in October. How should I train?",
     "Keep two easy runs and make the third a long run that grows by about a kilometre a week, up to 11 or 12 "
     "km. Add strides at the end of one easy run for speed."),
    ("My knee hurts a bit after the long runs at the moment.",
     "Shorten the long run for a week and see if it settles. Pain that changes your stride or lasts into the "
     "next day is worth showing to a physiotherapist."),
    ("What pace should the easy runs be?",
     "Slow enough to talk in full sentences. For most people that is one to two minutes per kilometre slower "
     "than their race pace."),
    ("Should I stretch before or after?",
     "Warm up with a few minutes of walking and easy jogging before; keep the long stretches for after, or for "
     "another time of day."),
    ("Do I need special shoes?",
     "Shoes that feel comfortable when you try them on are the best predictor. Replace them after about 700 "
     "or 800 km."),
    ("How do I taper before the race?",
     "Cut the volume by about a third in the last week, keep a few short fast bits, and sleep well the two "
     "nights before."),
])

GUITAR = ("Learning barre chords", "2025-06-03", [
    ("I've been learning guitar for a year and I still can't play a clean F barre chord.",
     "Almost everyone struggles with the F. Roll the index finger slightly onto its bony side, place it just "
     "behind the fret, and pull with your arm rather than squeezing with the thumb."),
    ("My hand gets tired after a minute.",
     "Practise it in short bursts: form the chord, strum, release, ten times, then rest. Strength comes from "
     "repetition, not from holding it longer."),
    ("Would a lighter string gauge help?",
     "Yes, 10s instead of 12s on an acoustic make barres much easier, and a setup with a lower action at the "
     "nut helps even more."),
    ("Which songs use a lot of barre chords but are not too fast?",
     "Slow songs in F or B flat major, or songs with Bm in them, are good practice. Play along at a reduced "
     "speed with an app that slows the recording without changing its pitch."),
    ("How long until it sounds clean?",
     "With ten minutes a day, most people get a clean barre in a few weeks, and a quick change into it in a "
     "few months."),
])

TAXES = ("Freelance invoices and VAT", "2025-07-11", [
    ("I started freelancing as a translator. Do I need to charge VAT to clients in other EU countries?",
     "For business clients in another EU country, the reverse charge usually applies: you invoice without VAT "
     "and note that the client accounts for it. For private clients the rules depend on your turnover."),
    ("What has to be on the invoice?",
     "Your name and tax number, the client's name and VAT number, an invoice number in sequence, the date, a "
     "description of the service, the amount, and the reverse charge note where it applies."),
    ("Can I use a spreadsheet for invoices?",
     "You can, as long as numbers are sequential and you keep a copy of each invoice as sent. Invoicing "
     "software makes the numbering and the reports easier."),
    ("How much should I set aside for income tax?",
     "A common rule of thumb is a quarter to a third of what you invoice, but it depends on your country's "
     "brackets and social contributions. An accountant can give you a figure for your first year."),
    ("Are my laptop and software deductible?",
     "Usually yes, as business expenses, sometimes spread over several years for equipment. Keep the receipts "
     "and note the share of business use."),
])

GARDEN = ("Tomatoes on a balcony", "2025-04-28", [
    ("I want to grow tomatoes on a small balcony that gets sun in the afternoon. Which kinds?",
     "Bush or dwarf varieties and cherry tomatoes do best in pots. Six hours of sun is enough for a good crop "
     "of cherry tomatoes."),
    ("How big should the pots be?",
     "At least 20 litres per plant; bigger pots dry out less in the afternoon heat."),
    ("How often do I water them?",
     "Every day in hot weather, deeply, in the morning. Uneven watering causes cracked fruit and blossom end "
     "rot."),
    ("The leaves are curling these days. Is that a disease?",
     "Leaf curl in heat is usually the plant protecting itself and is harmless. Yellow spots or dark patches "
     "are the signs to worry about."),
    ("Should I remove the side shoots?",
     "On cordon varieties yes, pinch them out while small. Bush varieties are left alone."),
])

#: The first case: three conversations and the fact.
FIRST_CONVERSATIONS = [SOURDOUGH, PANDAS, JAPAN]
#: Then more conversations and more facts.
MORE_CONVERSATIONS = [NETWORK, RUNNING, GUITAR, TAXES, GARDEN]

PORTO = ("f-porto", "The user moved to Porto in June 2025.", "2025-06-20")
MORE_FACTS = [
    ("f-sister", "The user's sister Ines works as a nurse in Lyon.", "2025-03-02"),
    ("f-allergy", "The user is allergic to penicillin.", "2025-01-15"),
    ("f-car", "The user drives a grey 2019 Toyota Corolla.", "2025-05-05"),
    ("f-dentist", "The user's dentist appointment is on 14 October at 9:30.", "2025-09-01"),
]

#: The Porto fact asked every way we could think of: fillers, scaffolding, indirect, lowercase.
PORTO_PHRASINGS = [
    "Where do I live?",
    "Where do I live now?",
    "Which city am I living in now?",
    "Where am I living these days?",
    "What city do I live in at the moment?",
    "Where do I currently live?",
    "Do I still live in the same place?",
    "What's my home city?",
    "Where is home for me?",
    "Where's home now?",
    "Which town do I call home?",
    "Remind me where I live.",
    "Tell me where I live now.",
    "Where did I move to?",
    "Where did I move last year?",
    "What city did I relocate to?",
    "Where am I based nowadays?",
    "Where's my place these days?",
    "Where do I stay at the moment?",
    "Am I still living in the same city?",
    "where do i live",
    "what city do i live in now",
    "My city of residence?",
    "Can you remind me which city I live in currently?",
    "So where am I living at the moment, remind me?",
    "Which city do I call home these days?",
]


def claude_export(conversations: list[tuple[str, str, list[tuple[str, str]]]]) -> list[dict[str, Any]]:
    """Claude.ai's conversations.json for ``conversations``."""
    out = []
    for n, (title, day, turns) in enumerate(conversations):
        messages = []
        for i, (human, assistant) in enumerate(turns):
            for j, (sender, text) in enumerate((("human", human), ("assistant", assistant))):
                stamp = f"{day}T10:{i:02d}:{j * 30:02d}Z"
                messages.append({"uuid": f"c{n}-m{2 * i + j}", "text": text, "sender": sender, "created_at": stamp,
                                 "updated_at": stamp, "attachments": [], "files": [],
                                 "content": [{"type": "text", "text": text, "citations": []}]})
        out.append({"uuid": f"00000000-0000-4000-8000-{n:012d}", "name": title, "summary": "",
                    "created_at": f"{day}T10:00:00Z", "updated_at": f"{day}T11:00:00Z",
                    "account": {"uuid": "a0a0a0a0-0000-4000-8000-000000000001"}, "chat_messages": messages})
    return out


def write_export(folder: Path, conversations: list[tuple[str, str, list[tuple[str, str]]]]) -> Path:
    path = folder / "conversations.json"
    path.write_text(json.dumps(claude_export(conversations), indent=1))
    return path
