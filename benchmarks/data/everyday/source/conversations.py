"""Long conversations that hold none of the stated facts: the haystacks' unrelated memories.

Written for this set (issue 41). Several are traps on purpose: they use the filler words of the
fact questions (now, these days, currently, still, at the moment), and words close to the facts'
subjects (a flat's walls, a brother's car, a friend's move, a knee in a training plan), as a
person's real history does. Each is a list of turns, user first, alternating.
"""

CONVERSATIONS = [
    {
        "id": "pandas-groupby",
        "name": "pandas groupby drops a column",
        "turns": [
            "I'm grouping a sales DataFrame by region and month with df.groupby(['region', 'month']).sum() and I get "
            "KeyError: 'date' on the next line where I do df['date'].dt.year. The column was definitely there before.",
            "The groupby turned 'region' and 'month' into the index and summed the rest; a datetime column cannot be "
            "summed, so recent pandas versions drop it (older ones raised a FutureWarning first). After the "
            "aggregation there is no 'date' column left, hence the KeyError. Either aggregate it explicitly, for "
            "example df.groupby(['region', 'month']).agg(total=('amount', 'sum'), first_day=('date', 'min')), or "
            "compute the year before grouping and group by it.",
            "OK I added numeric_only=True like the warning said. But now sum() also drops my 'date' column and the "
            "'store_id' column which is an integer I don't want summed at all.",
            "numeric_only=True keeps numeric columns only, so 'date' is dropped on purpose, and 'store_id' is summed "
            "because it is an integer. Summing identifiers is meaningless. Use agg with a dictionary: {'amount': "
            "'sum', 'units': 'sum', 'store_id': 'nunique', 'date': 'max'}. That gives one clear rule per column and "
            "nothing disappears silently.",
            "That works. Is there a way to keep region and month as normal columns instead of the index? My plotting "
            "code expects them as columns.",
            "Pass as_index=False to groupby, or call .reset_index() after the aggregation. With as_index=False the "
            "result is a flat DataFrame with 'region' and 'month' as columns, which seaborn and plotly both take "
            "directly.",
            "Last thing, the month column is a string like '2024-03'. Sorting puts '2024-10' before '2024-2' in one "
            "file because someone wrote months without zero padding.",
            "Convert it to a period before grouping: df['month'] = pd.to_datetime(df['month'], format='mixed')"
            ".dt.to_period('M'). Periods sort chronologically whatever the original padding, and they print as "
            "2024-02 in plots. If the source files keep coming in mixed formats, normalise them at load time in one "
            "function so every report reads the same thing.",
        ],
    },
    {
        "id": "mesh-wifi",
        "name": "Wi-Fi dead zones",
        "turns": [
            "Our flat has thick stone walls and the Wi-Fi dies in the back bedroom and the kitchen. The router is in "
            "the hallway by the front door because that's where the fibre comes in. Would a mesh system fix it?",
            "Stone walls absorb 2.4 and especially 5 GHz signals, so a single router in the hallway will struggle. A "
            "mesh system helps if each node can still hear the previous one: put the second node halfway, in a "
            "doorway if possible, not behind the thickest wall. If there is any cable path, a wired backhaul "
            "(Ethernet between nodes) makes mesh far more reliable in old buildings.",
            "There's no ethernet anywhere. What about powerline adapters? My landlord won't let me drill.",
            "Powerline can work well in flats where all sockets are on the same circuit; in older wiring speeds vary "
            "a lot from socket to socket. A good combination is a powerline adapter with a built-in access point in "
            "the back bedroom. Plug it straight into the wall, not into an extension strip with a surge protector, "
            "which filters the signal.",
            "At the moment I get about 8 Mbps in the kitchen and 300 next to the router. What's realistic with "
            "powerline?",
            "Expect something between 50 and 150 Mbps in practice, whatever the box promises. That is plenty for "
            "video calls and streaming. Run a speed test from three sockets before deciding where the adapter goes, "
            "and return it if the best socket is under 40 Mbps; then a two-node mesh with the satellite in the "
            "kitchen doorway is the next thing to try.",
            "Thanks, I'll try the socket by the bookshelf first since it's closest to the bedroom.",
            "Sounds like a plan. Also set the access point to use the same network name and password as the router "
            "so phones roam between them, but give them different channels to avoid interference.",
        ],
    },
    {
        "id": "sourdough",
        "name": "Sourdough starter not rising",
        "turns": [
            "My sourdough starter is two weeks old and it still doesn't double. It bubbles a bit, smells like nail "
            "polish remover, and sinks in water. I feed it once a day with 50 g flour and 50 g water.",
            "The nail polish smell is acetone-like, which means the yeast and bacteria are hungry: they ran out of "
            "food hours before the next feeding. Try feeding twice a day, discard down to 25 g each time, and feed "
            "1:2:2 (starter, flour, water). Using some wholemeal rye in the flour gives it more to eat and usually "
            "wakes it up within a few days.",
            "My kitchen is cold these days, maybe 17 degrees. Does that matter?",
            "A lot. At 17 degrees a starter is slow; at 24 to 26 it is lively. Put the jar in the oven with only the "
            "light on, or on top of the fridge, or in a small cooler with a jar of warm water. Mark the level with "
            "a rubber band after feeding so you can see the rise rather than guess it.",
            "It doubled in 6 hours after I moved it to the oven with the light on. Can I bake now?",
            "If it reliably doubles within 4 to 8 hours for three feedings in a row, yes. Use it at its peak, when "
            "the dome is just starting to flatten. For a first loaf keep the hydration around 70 percent: 500 g "
            "bread flour, 350 g water, 100 g starter, 10 g salt, bulk ferment until it grows by half, shape, and "
            "proof overnight in the fridge.",
            "What do I do with all the discard? Throwing out flour every day feels wasteful.",
            "Keep it in a jar in the fridge and use it in crackers, pancakes, flatbreads or waffles, where it adds "
            "flavour without needing to rise. Once the starter is strong you can also keep it in the fridge between "
            "bakes and feed it once a week, which cuts the discard to almost nothing.",
        ],
    },
    {
        "id": "japan-itinerary",
        "name": "Two weeks in Japan in April",
        "turns": [
            "Planning two weeks in Japan in April with my partner: Tokyo, Kyoto, and something rural. We like food, "
            "walking and old temples, not nightlife. Does a Japan Rail Pass still make sense after the price rise?",
            "For Tokyo, Kyoto and one rural stop the pass rarely pays off now: a Tokyo to Kyoto one-way shinkansen "
            "is about 14,000 yen, and regional passes (JR West Kansai, for example) are much cheaper than the "
            "national one. Buy individual tickets with the SmartEX app for the long legs and use an IC card like "
            "Suica or ICOCA for everything local.",
            "Where should we stay in Kyoto to walk to things? We don't want to take buses all day because I read "
            "they're packed.",
            "Stay around Gion, Higashiyama or near Sanjo: Kiyomizu-dera, Yasaka Shrine, the Philosopher's Path and "
            "Nishiki Market are all walkable from there. Kyoto buses are crowded in spring; the subway and Keihan "
            "line cover much of the east side. Visit Fushimi Inari early in the morning and walk past the first "
            "gates; most visitors turn back at the Yotsutsuji viewpoint.",
            "For the rural part, is the Kumano Kodo doable in two days for people who walk a lot but aren't hikers?",
            "Yes: the Nakahechi route from Takijiri to Hongu over two days, with a night in a minshuku at Chikatsuyu, "
            "is the classic version. It is about 38 km with some steep stone steps, so good shoes matter more than "
            "fitness. Send your big bags ahead with a luggage service and carry a day pack.",
            "And cherry blossoms, will we still see them in mid April?",
            "In Tokyo and Kyoto the peak is usually late March to early April, so by mid April most trees are past "
            "full bloom, though late varieties and higher areas can still be in flower. The Kumano area is a bit "
            "later in the hills. Expect fresh green leaves rather than pink clouds, which many people find just as "
            "beautiful and far less crowded.",
        ],
    },
    {
        "id": "brother-car",
        "name": "Hybrid or electric for a long commute",
        "turns": [
            "My brother drives 90 km a day to work and his old diesel is dying. He's torn between a used Toyota "
            "Corolla hybrid and a used electric car like a Hyundai Ioniq. Which would you pick for him?",
            "For 90 km a day with charging at home, an electric car is cheaper to run and has fewer parts to wear. "
            "Without a home charger the hybrid is simpler: public charging every other day becomes a chore. So the "
            "first question is whether he can charge where he parks overnight. If yes, check the battery health "
            "report of any used EV before buying.",
            "He lives in a house with a driveway, so charging is fine. What about winter range?",
            "Expect 20 to 30 percent less range in cold weather, more on short trips with heating on. A used Ioniq "
            "Electric with the 38 kWh battery still covers 90 km comfortably in winter. Preconditioning the cabin "
            "while plugged in saves range. A heat pump, if the car has one, helps noticeably.",
            "What should he check on a test drive of a used EV?",
            "Ask for a state of health reading of the battery (a dealer can print it), try DC fast charging if "
            "possible to see the charging speed, check that the charge port door and cable lock work, listen for "
            "suspension knocks since EVs are heavy, and look at tyre wear. Confirm the remaining battery warranty "
            "and whether it transfers to a new owner.",
            "He's still worried about resale value.",
            "Used EV prices dropped sharply in 2023 and 2024, which is exactly why they are good buys now: much of "
            "the depreciation has already happened. Buying rather than leasing and keeping the car for six or more "
            "years makes resale value matter much less than running costs.",
        ],
    },
    {
        "id": "friend-move",
        "name": "Packing tips for a friend's move",
        "turns": [
            "I'm helping a friend move out of her two-bedroom apartment next weekend. She's barely packed. What's "
            "the fastest order to pack in so we're not still wrapping plates when the van arrives?",
            "Pack from least used to most used: books, decorations, off-season clothes and spare bedding first; "
            "then the kitchen except a small kit of one pan, plates and mugs; then wardrobes. Keep a box of "
            "essentials (chargers, tools, toilet paper, kettle, documents) that travels in the car, not in the van.",
            "How many boxes do we need roughly?",
            "For a two-bedroom place, plan 50 to 70 boxes: about 20 small ones for books and heavy things, 30 "
            "medium, and 10 large for light items like pillows and lampshades. Label each box on two sides with "
            "the room it goes to in the new place, not the room it came from.",
            "She has a huge monstera and a glass tabletop. Any tricks?",
            "Tie the monstera's leaves loosely upwards with soft string or an old sheet and move it last, in the "
            "car if possible. For the glass top, tape an X across it with painter's tape, sandwich it between two "
            "pieces of cardboard larger than the glass, and carry it on its edge, never flat.",
            "Anything she should do in the new place on day one?",
            "Photograph the meter readings, check the smoke alarm, change the locks or at least ask who has keys, "
            "and make the bed before anything else. After a long moving day a made bed is worth more than an "
            "unpacked kitchen.",
        ],
    },
    {
        "id": "kitchen-budget",
        "name": "Renovation budget spreadsheet",
        "turns": [
            "I'm building a spreadsheet for a kitchen renovation: cabinets, worktop, appliances, plumber, "
            "electrician, tiles. How should I structure it so I can see if we're over budget?",
            "Use one row per item with columns for category, quoted cost, actual cost, paid to date, supplier and "
            "status. Add a contingency line of 10 to 15 percent of the total. A summary block at the top with "
            "SUMIFS by category shows where the money goes, and a single cell with budget minus committed cost "
            "tells you at a glance how much room is left.",
            "The plumber gave a range, 1,800 to 2,600. How do I put a range in?",
            "Give it two columns, low and high, and sum both: you get a best and worst case total. Put the midpoint "
            "in the quoted column until you have a fixed price. Highlight any row whose high estimate alone would "
            "eat more than half the contingency.",
            "We're currently at 23,400 committed against a 25,000 budget and the tiles aren't chosen yet.",
            "That leaves 1,600 including contingency, which is thin. Decide the tile budget now rather than in the "
            "showroom: measure the area, add 10 percent for cuts, and set a price per square metre you can afford. "
            "Consider cheaper tiles for the floor under appliances and units, where nobody sees them.",
            "Can I make the spreadsheet warn me automatically?",
            "Use conditional formatting on the remaining budget cell: amber under 10 percent of the budget, red "
            "under zero. In Google Sheets you can also add a data validation rule that flags any actual cost more "
            "than 15 percent above its quote, so overruns are noticed when they are entered.",
        ],
    },
    {
        "id": "marathon-plan",
        "name": "Half marathon training",
        "turns": [
            "I want to run a half marathon in October. At the moment I run 3 times a week, about 20 km total, easy "
            "pace around 6:15 per km. Can you sketch a 14-week plan?",
            "Build from 20 to about 40 km a week over 10 weeks, then taper. Keep three runs: one easy, one with "
            "intervals or tempo, and one long run growing from 8 to 18 km. Add a fourth short easy run from week "
            "5 if your legs feel fresh. Every fourth week, drop the volume by a quarter to recover.",
            "My left knee gets sore on long downhill runs. Should I worry?",
            "Pain on the outside of the knee on descents is often the iliotibial band, and front-of-knee pain often "
            "comes from the kneecap tracking. Shorten your stride downhill, add hip and glute strength work twice a "
            "week, and reduce downhill mileage for a while. If the pain is sharp, swells, or lasts into the next "
            "day, see a physiotherapist before building further.",
            "What pace should the long runs be?",
            "Slow: 60 to 90 seconds per km slower than race pace, so for you roughly 6:30 to 7:00. Long runs build "
            "endurance; running them too fast only adds fatigue. Practise your race-day breakfast and gels on the "
            "last three long runs.",
            "How do I pick a goal time?",
            "Run a 5 km time trial in week 6 and put it into a race predictor: a 26-minute 5 km suggests roughly "
            "2:00 for a half. Start the race at that pace or slightly slower, and speed up after 15 km only if you "
            "still feel strong.",
        ],
    },
    {
        "id": "asyncio-timeout",
        "name": "asyncio tasks never finish",
        "turns": [
            "At work we have a Python service that fetches 200 URLs with aiohttp and asyncio.gather. Sometimes it "
            "hangs forever and never returns. No exception, nothing in the logs.",
            "A request with no timeout can wait forever on a server that accepts the connection and never answers. "
            "aiohttp's default total timeout is 5 minutes, but a custom ClientTimeout or a session created with "
            "timeout=None removes it. Set ClientTimeout(total=30, sock_read=10) on the session, and wrap gather in "
            "asyncio.wait_for as an outer guard.",
            "We currently create a new ClientSession for every request. Is that a problem?",
            "Yes: each session opens its own connection pool, so 200 sessions means no connection reuse and many "
            "sockets in TIME_WAIT. Create one session for the whole batch and pass it in. Limit concurrency with "
            "an asyncio.Semaphore of 20 or a TCPConnector(limit=20) so you do not flood the target servers.",
            "If one URL fails, gather raises and we lose all the other results.",
            "Use gather(..., return_exceptions=True) and sort the results afterwards into successes and failures, "
            "or in Python 3.11+ use a TaskGroup and handle errors per task inside a wrapper coroutine that returns "
            "a result object. Log the URL with each failure so you can retry only those.",
            "Is there a way to see which task is stuck when it hangs?",
            "Run the service with PYTHONASYNCIODEBUG=1 to get warnings for slow callbacks, and add a periodic task "
            "that prints asyncio.all_tasks() with each task's get_stack(). The faulthandler module with "
            "dump_traceback_later also helps find where the event loop itself is blocked.",
        ],
    },
    {
        "id": "kids-party",
        "name": "Birthday party for a seven-year-old",
        "turns": [
            "I'm organising a birthday party for my friend's son who turns seven: about 12 kids, two hours, in a "
            "community hall. He loves dinosaurs. Help me plan the timeline.",
            "Two hours works well as: 15 minutes of arrival with a colouring table, 30 minutes of organised games, "
            "20 minutes of a dinosaur dig, 25 minutes of food, 10 minutes of cake, and 20 minutes of free play and "
            "party bags while parents collect. Keep one adult per four kids for the games.",
            "What's a dinosaur dig?",
            "Bury plastic dinosaur skeletons or small toy dinosaurs in a tray of play sand, and give each child a "
            "paintbrush and a spoon to excavate them like palaeontologists. Each child keeps one dinosaur, which "
            "doubles as the party bag gift. A shallow paddling pool works as the tray.",
            "Games that work in a hall with hard floors?",
            "Dinosaur stomp (musical statues with stomping), a floor-is-lava crossing with cushions, egg and spoon "
            "race with plastic eggs, and pin the tail on the T-rex. Avoid anything with sliding in socks on a hard "
            "floor.",
            "One kid has a nut allergy. Anything to watch for?",
            "Make the whole party nut-free rather than one plate, since children swap food. Check cake and "
            "chocolate labels for 'may contain nuts', tell every parent in the invitation, and ask the allergic "
            "child's parent to bring their medication and brief you on it.",
        ],
    },
    {
        "id": "freelance-invoices",
        "name": "Freelance invoice questions",
        "turns": [
            "I did a small freelance illustration job on the side, 1,200 for a book cover. How should the invoice "
            "look so it's professional?",
            "Include your name and address, the client's name and address, an invoice number that follows a "
            "sequence, the invoice date, a short description of the work and usage rights granted, the amount, "
            "payment terms (for example 30 days), and your bank details. Add your tax identification number if "
            "your country requires it on invoices.",
            "Do I need to charge VAT?",
            "That depends on where you are registered and your turnover. In many countries small freelancers under "
            "a turnover threshold are exempt and must not charge VAT, sometimes with a sentence on the invoice "
            "saying so. Check the threshold with your tax office or an accountant before sending it.",
            "The client hasn't paid and it's been 45 days.",
            "Send a polite reminder with the invoice attached and the due date, then a second one after a week with "
            "a firmer tone and a date by which you expect payment. Many jurisdictions allow statutory late payment "
            "interest for business clients; mentioning it often speeds things up.",
            "Should I put the usage rights in the invoice or a separate contract?",
            "Ideally a short separate agreement signed before the work, and a one-line summary on the invoice "
            "(for example, 'non-exclusive licence for print and e-book covers, worldwide, 5 years'). The invoice "
            "alone is weak evidence of what was agreed.",
        ],
    },
    {
        "id": "fiddle-leaf",
        "name": "Fiddle leaf fig dropping leaves",
        "turns": [
            "My fiddle leaf fig is dropping its lower leaves, they get brown spots first. It sits in the living "
            "room about two metres from a north-facing window.",
            "Brown spots that start in the middle of the leaf and spread are usually overwatering or root rot; "
            "crispy brown edges are underwatering or dry air. Two metres from a north window is also quite dark "
            "for a fiddle leaf fig, which wants bright indirect light. Move it right next to the window.",
            "I water it every Sunday with about a litre.",
            "A schedule is the risk: in low light the soil stays wet much longer. Water only when the top 5 cm "
            "are dry, and make sure the pot drains. Lift the pot before and after watering to learn how a dry pot "
            "feels. In winter that may mean every two or three weeks.",
            "Should I repot it?",
            "Only if water sits in the pot or the roots smell bad. Then slide it out, cut off black mushy roots, "
            "and repot in a chunky mix (potting soil with bark and perlite) in a pot only slightly bigger. Do it in "
            "spring if you can; a stressed plant in winter recovers slowly.",
            "Will the bare lower stem grow leaves back?",
            "Not usually: fiddle leaf figs rarely regrow leaves lower on the stem. To make it bushier, notch or "
            "prune the top in spring, which encourages side branches. The plant will look sparse for a season "
            "and then fill out.",
        ],
    },
    {
        "id": "chess-openings",
        "name": "Chess openings for a beginner",
        "turns": [
            "I've been playing chess online for three months, rated about 1100. Which openings should I learn as "
            "white and black without memorising huge lines?",
            "As white, the Italian Game (1.e4 e5 2.Nf3 Nc6 3.Bc4) or the London System teach development and "
            "castling with simple plans. As black, answer 1.e4 with 1...e5 and 1.d4 with 1...d5, mirroring the "
            "centre. Learn the ideas and the first five or six moves, not twenty-move lines.",
            "I keep losing to the Fried Liver attack.",
            "After 1.e4 e5 2.Nf3 Nc6 3.Bc4 Nf6 4.Ng5, avoid 4...d5 5.exd5 Nxd5, which allows the sacrifice on f7. "
            "Play 4...d5 5.exd5 Na5 instead, the main line, where black gives a pawn for quick development. Or "
            "avoid it entirely by playing 3...Bc5, the Giuoco Piano.",
            "How much time should I spend on openings versus tactics?",
            "At your level, about 70 percent tactics puzzles and endgame basics, 20 percent reviewing your own "
            "games, and 10 percent openings. Most games under 1500 are decided by a missed tactic, not by the "
            "opening.",
            "Any endgames I must know?",
            "King and queen against king, king and rook against king, the basic king and pawn endings with the "
            "opposition and the square of the pawn, and the Lucena and Philidor positions in rook endings. These "
            "come up again and again.",
        ],
    },
    {
        "id": "film-camera",
        "name": "Developing black and white film at home",
        "turns": [
            "I bought an old Olympus OM-1 and want to develop black and white film at home. What's the minimum kit?",
            "A daylight developing tank with reels (Paterson is common), a changing bag to load the film in the "
            "dark, a thermometer, measuring jugs, a timer, and three chemicals: developer, stop bath (or plain "
            "water), and fixer. Add a wetting agent for the final rinse and clips to hang the film to dry.",
            "Which developer is easiest?",
            "Rodinal or HC-110 are liquid concentrates that keep for years and are diluted one-shot, so there is "
            "nothing to mix or store. Ilford Ilfosol 3 is also forgiving. Pair it with a classic film like HP5 or "
            "Tri-X, which have development times for every developer on the Massive Dev Chart.",
            "My first roll came out very thin and grey.",
            "Thin negatives usually mean underexposure in the camera or underdevelopment in the tank. If the "
            "frame numbers and film edge markings are dense and clear, development was fine and the camera "
            "underexposed: check the light meter battery, since the OM-1 was designed for mercury cells and "
            "modern replacements can read differently.",
            "How do I scan the negatives?",
            "A flatbed scanner with a film holder is fine for sharing online. For better results, photograph them "
            "with a digital camera and a macro lens over a light pad, then invert the colours in software. Keep "
            "the negatives flat and dust-free in archival sleeves.",
        ],
    },
    {
        "id": "budget-app",
        "name": "Personal budget categories",
        "turns": [
            "I'm setting up a budgeting app and can't decide on categories. I keep ending up with 40 of them and "
            "then stop using it after two weeks.",
            "Start with about ten: housing, utilities, groceries, eating out, transport, health, subscriptions, "
            "gifts, savings, and everything else. You can split a category later if it grows unreadable. Fewer "
            "categories means less time deciding where a purchase belongs, which is why people stick with them.",
            "Where do I put things like a new phone or a laptop?",
            "Make a sinking fund category for irregular big purchases: set aside a fixed amount each month and "
            "spend from it when the laptop dies. It stops a single large purchase from wrecking one month's "
            "budget.",
            "We share some costs with my partner. How do we handle that?",
            "A common setup is a joint account for shared bills (rent, utilities, groceries) that each of you pays "
            "into in proportion to income, and separate accounts for personal spending. In the app, track only "
            "your share of the joint costs, or track the joint account as its own budget.",
            "How often should I review it?",
            "Briefly once a week to categorise transactions, taking ten minutes, and properly once a month to "
            "compare with the plan and adjust next month's numbers. The weekly habit is what makes the monthly "
            "review painless.",
        ],
    },
    {
        "id": "bike-chain",
        "name": "Bike chain skipping",
        "turns": [
            "My bike's chain skips when I pedal hard in the smaller rear cogs. It's a commuter bike with about "
            "4,000 km on it and I've never changed anything.",
            "After 4,000 km the chain is probably stretched, and a worn chain skips on the small cogs first because "
            "they have the fewest teeth engaged. Measure it with a chain checker: at 0.5 percent wear replace the "
            "chain; at 0.75 or more the cassette is likely worn too and will skip even with a new chain.",
            "If I replace only the chain and it still skips?",
            "Then the cassette (and possibly the chainrings) has worn to match the old chain, and you need a new "
            "cassette as well. Replacing chains regularly, every 2,000 to 3,000 km, makes the cassette last for "
            "three or four chains, which is cheaper overall.",
            "Can I do this myself?",
            "Yes, with a chain tool, a cassette lockring tool and a chain whip. Count the links of the old chain "
            "or size the new one by wrapping it around the largest cog and chainring. Quick links make it easy to "
            "remove the chain for cleaning later.",
            "How do I keep the new chain lasting longer?",
            "Wipe it after wet rides, degrease and re-lube it every few hundred kilometres, and wipe off excess "
            "lube so it does not collect grit. Check wear every 1,000 km so you catch it at 0.5 percent.",
        ],
    },
]
