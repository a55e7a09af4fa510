"""An Obsidian-style vault of one person's notes, and the questions asked of it.

Each note: its path in the vault (the file name is its name in Obsidian), its front matter (key,
value pairs written as YAML; a list is written as a YAML list) and its body. Bodies never repeat
the note's title: in Obsidian the title is the file name (or a ``title:`` key). Some notes have
section headings that are not their title, some only checklists, some many bullets.

Questions (``NOTE_QUESTIONS``): ``title`` questions are generated, one per note (the note's title
as the query); the rest are written here: by a front matter value, impersonal questions, keyword
queries, and questions about one bullet of a long note. ``gold`` is the note's path.
"""

NOTES = [
    # -- recipes --------------------------------------------------------------------------------
    {"path": "Recipes/Shakshuka.md",
     "front": {"servings": "2", "time": "30 min", "tags": ["breakfast", "vegetarian"], "created": "2024-05-12"},
     "body": "## Ingredients\n- 1 onion, 1 red pepper, 2 garlic cloves\n- 1 tin chopped tomatoes\n- 1 tsp cumin, "
             "1 tsp smoked paprika, pinch of chilli flakes\n- 4 eggs\n- feta and parsley to finish\n\n## Method\n"
             "1. Soften onion and pepper for 8 minutes, add garlic and spices for one more.\n2. Add tomatoes, "
             "simmer 10 minutes until thick.\n3. Make four wells, crack in the eggs, cover, cook 6-8 minutes until "
             "the whites set.\n\nServe straight from the pan with crusty bread."},
    {"path": "Recipes/Red lentil soup.md",
     "front": {"servings": "6", "time": "40 min", "tags": ["soup", "freezer"], "created": "2024-10-03"},
     "body": "- 300 g red lentils, rinsed\n- 1 onion, 2 carrots, 1 celery stick, diced\n- 1.5 l vegetable stock\n"
             "- 1 tsp turmeric, 1 tsp ground coriander\n- juice of half a lemon at the end\n\nCook the vegetables "
             "until soft, add lentils and stock, simmer 25 minutes, blend half of it so it stays chunky. Freezes "
             "well for three months."},
    {"path": "Recipes/Banana bread.md",
     "front": {"servings": "8", "oven": "175 C", "time": "1 h 10 min", "source": "Grandma Rosa", "created": "2023-11-19"},
     "body": "Three very ripe bananas, the blacker the better. Mash with 75 g melted butter, 150 g sugar, 1 egg and "
             "a splash of vanilla. Fold in 190 g flour, 1 tsp baking soda and a pinch of salt. Walnuts optional.\n\n"
             "Loaf tin, lined. Bake 55-65 minutes; a skewer should come out clean. Cover with foil after 40 "
             "minutes if the top browns too fast."},
    {"path": "Recipes/Thai green curry.md",
     "front": {"servings": "4", "spice": "medium", "created": "2025-02-08"},
     "body": "Fry 3 tbsp paste in the thick top of a tin of coconut milk until it splits and smells fragrant. Add "
             "chicken thighs (or tofu) and cook through, then the rest of the coconut milk, a handful of green "
             "beans and bamboo shoots. Season with fish sauce and palm sugar; finish with Thai basil and lime "
             "leaves. Jasmine rice on the side."},
    {"path": "Recipes/Overnight oats.md",
     "front": {"servings": "1", "tags": ["breakfast"]},
     "body": "- 50 g oats\n- 100 ml milk + 50 g yoghurt\n- 1 tbsp chia seeds\n- grated apple and cinnamon, or "
             "frozen berries\n\nMix in a jar the night before, fridge, eat cold. Keeps 3 days."},
    {"path": "Recipes/Pizza dough.md",
     "front": {"hydration": "65%", "makes": "4 pizzas", "created": "2024-08-30"},
     "body": "500 g 00 flour, 325 g water, 10 g salt, 3 g instant yeast. Knead 10 minutes, bulk 2 hours at room "
             "temperature, ball up, then 24-72 hours in the fridge. Take out 2 hours before baking. Hottest oven "
             "setting with a steel on the top shelf, 6-7 minutes per pizza."},
    # -- trips ----------------------------------------------------------------------------------
    {"path": "Trips/Kyoto 2023.md",
     "front": {"start": "2023-04-02", "end": "2023-04-09", "with": "Jonas", "tags": ["travel", "japan"]},
     "body": "## Days\n- Day 1: arrived Kyoto Station, ryokan near Gojo, walked Pontocho at night\n- Day 2: "
             "[[Fushimi Inari]] at 7 am, then Tofuku-ji\n- Day 3: Arashiyama bamboo grove, Okochi Sanso villa "
             "(worth the ticket, matcha included)\n- Day 4: Nara day trip, deer everywhere\n- Day 5: Philosopher's "
             "Path, Ginkaku-ji, Nanzen-ji aqueduct\n- Day 6: rain, Kyoto National Museum, Nishiki Market\n- Day 7: "
             "Kurama to Kibune hike\n\n## Food\n- Best meal: the tofu place in Arashiyama\n- Omen udon near "
             "Ginkaku-ji"},
    {"path": "Trips/Fushimi Inari.md",
     "front": {"type": "place", "location": "Kyoto", "tags": ["japan", "shrine"]},
     "body": "Thousands of vermilion torii gates up the mountain behind the shrine. The full loop to the summit "
             "takes 2-3 hours. Crowds thin out after the Yotsutsuji intersection, about halfway, which has the "
             "best view over the city. Go at dawn. Free entry, open all night.\n\nSee [[Kyoto 2023]]."},
    {"path": "Trips/Lisbon long weekend.md",
     "front": {"start": "2024-10-11", "end": "2024-10-14", "tags": ["travel", "portugal"]},
     "body": "- Stayed in Alfama, steep but lovely\n- Tram 28 is a queue, walked instead\n- Pastéis de Belém: "
             "worth the line, eat them warm with cinnamon\n- LX Factory on Sunday\n- Sintra day trip: Pena Palace "
             "booked ahead for 10:00, Quinta da Regaleira well\n- Sunset at Miradouro da Senhora do Monte"},
    {"path": "Trips/Packing list.md",
     "front": {"tags": ["travel", "checklist"]},
     "body": "## Documents\n- [ ] passport (check expiry, 6 months)\n- [ ] travel insurance card\n- [ ] printed "
             "booking confirmations\n\n## Electronics\n- [ ] universal adapter\n- [ ] power bank\n- [ ] "
             "headphones\n\n## Clothes\n- [ ] rain jacket\n- [ ] one smart outfit\n- [ ] swimsuit\n\n## "
             "Toiletries\n- [ ] toothbrush\n- [ ] sunscreen\n- [ ] blister plasters"},
    {"path": "Trips/Scotland road trip.md",
     "front": {"start": "2025-05-20", "end": "2025-05-31", "car": "rental", "tags": ["travel"]},
     "body": "Edinburgh - Pitlochry - Inverness - Skye - Glencoe - Glasgow.\n\n- Skye: book accommodation months "
             "ahead, Portree fills up\n- Fairy Pools early, parking is tiny\n- Single-track roads: use passing "
             "places, wave\n- Midges in Glencoe from late May: Smidge repellent\n- Old Man of Storr: 45 minutes "
             "up, muddy"},
    # -- books ----------------------------------------------------------------------------------
    {"path": "Books/The Machine Stops.md",
     "front": {"author": "E. M. Forster", "published": "1909", "rating": "4", "tags": ["book", "sci-fi"]},
     "body": "A short story about humans living underground in hexagonal cells, every need served by a global "
             "Machine, talking to each other only through screens. Vashti never leaves her room; her son Kuno wants "
             "to see the surface. When the Machine slowly breaks down, nobody remembers how it works.\n\nStrange "
             "how much it predicts video calls and dependence on systems nobody understands."},
    {"path": "Books/Piranesi.md",
     "front": {"author": "Susanna Clarke", "rating": "5", "finished": "2024-02-18", "tags": ["book"]},
     "body": "The narrator lives in an endless House of halls filled with statues, with tides flooding the lower "
             "halls. He keeps meticulous journals. Beautiful, calm, then quietly devastating. Read it in two "
             "evenings. Lend to Jonas."},
    {"path": "Books/Reading list 2026.md",
     "front": {"tags": ["book", "checklist"], "created": "2026-01-02"},
     "body": "- [x] The Left Hand of Darkness\n- [ ] Middlemarch\n- [ ] The Overstory\n- [ ] Braiding Sweetgrass\n"
             "- [ ] Klara and the Sun\n- [ ] The Dispossessed\n- [ ] A Psalm for the Wild-Built"},
    {"path": "Books/The Left Hand of Darkness.md",
     "front": {"author": "Ursula K. Le Guin", "rating": "4", "finished": "2026-01-25", "tags": ["book", "sci-fi"]},
     "body": "Genly Ai, an envoy, on the ice planet Gethen, whose people have no fixed sex. The crossing of the "
             "Gobrin glacier is the best part of the book. Slow start; the politics of Karhide and Orgoreyn make "
             "sense only in the second half."},
    {"path": "Books/Thinking in Systems.md",
     "front": {"author": "Donella Meadows", "tags": ["book", "non-fiction"]},
     "body": "- A system is elements, interconnections and a purpose; the purpose matters most\n- Stocks change "
             "only through flows\n- Balancing loops seek a goal, reinforcing loops run away\n- Delays in feedback "
             "cause oscillation\n- Leverage points: the most powerful are paradigms, the weakest are parameters\n"
             "- Policy resistance: when actors pull a system towards different goals"},
    # -- games ----------------------------------------------------------------------------------
    {"path": "Games/Catan.md",
     "front": {"players": "3-4", "playtime": "90 min", "tags": ["boardgame"]},
     "body": "## House rules we use\n- Friendly robber: no robbing players with 2 points\n- Rolling a 7: anyone "
             "with more than 7 cards discards half\n- Longest road needs 5 segments, largest army 3 knights\n\n"
             "## Strategy notes\n- Ore and wheat win the late game (cities, development cards)\n- Don't neglect a "
             "port if you have a lot of one resource"},
    {"path": "Games/Codenames.md",
     "front": {"players": "4-8", "playtime": "15 min", "tags": ["boardgame", "party"]},
     "body": "Two spymasters give one-word clues plus a number. Hitting the assassin card loses the game instantly. "
             "Works best with 6 people. The Duet version is for two players."},
    {"path": "Games/Wingspan.md",
     "front": {"players": "1-5", "playtime": "60 min", "tags": ["boardgame"]},
     "body": "Engine building with birds. Four rounds, each with fewer action cubes. Brown powers trigger on every "
             "activation of their row. Pink powers trigger on other players' turns. Bonus cards decide close "
             "games."},
    # -- home -----------------------------------------------------------------------------------
    {"path": "Home/Where things hide.md",
     "front": {"tags": ["home", "tips"], "created": "2024-12-28"},
     "body": "- A lost object is usually within arm's reach of where it was last used\n- Keys: coat pockets, the "
             "fruit bowl, the door of the fridge\n- Glasses: on your head, next to the bathroom sink, in the car's "
             "door pocket\n- The remote: between the sofa cushions or under the cat\n- Phone: call it; if on "
             "silent, check the laundry basket\n- Passport: the folder in the desk's second drawer\n- Spare "
             "batteries: the box on the top shelf of the hall cupboard\n- Tape measure: toolbox under the stairs\n"
             "- Scissors: kitchen drawer left of the oven\n- Phone chargers: behind the bedside table\n- Look "
             "twice in the obvious place before searching the whole house\n- Put things back in the same spot "
             "every time: the habit is the fix"},
    {"path": "Home/Boiler.md",
     "front": {"model": "Vaillant ecoTEC plus 832", "installed": "2019", "last_service": "2025-10-14"},
     "body": "Pressure should be between 1 and 1.5 bar when cold. If it drops below 1, top up with the filling "
             "loop under the boiler (silver lever), slowly, then close it. Fault F.22 means low water pressure. "
             "Annual service in October, Heatwise Ltd."},
    {"path": "Home/Cleaning rota.md",
     "front": {"tags": ["home", "checklist"]},
     "body": "## Weekly\n- [ ] hoover all rooms\n- [ ] bathrooms\n- [ ] change bed sheets\n- [ ] wipe kitchen "
             "surfaces and hob\n\n## Monthly\n- [ ] descale kettle\n- [ ] clean the oven\n- [ ] wash the shower "
             "curtain\n- [ ] dust skirting boards"},
    {"path": "Home/Plant care.md",
     "front": {"tags": ["home", "plants"]},
     "body": "- Monstera: water when top 5 cm dry, bright indirect light, wipe leaves monthly\n- Snake plant: "
             "water every 3-4 weeks, tolerates dark corners\n- Pothos: droops when thirsty, recovers within hours\n"
             "- Calathea: filtered or rain water only, hates draughts, likes the bathroom\n- Basil on the window "
             "sill: pinch the tops so it bushes out, never let it flower\n- Orchid: three ice cubes a week is a "
             "myth; soak the pot for 10 minutes every 10 days\n- Fertilise everything March to September, half "
             "strength"},
    {"path": "Home/Fuse box.md",
     "front": {"location": "hall cupboard, behind the coats"},
     "body": "- 1: kitchen sockets\n- 2: oven\n- 3: upstairs lights\n- 4: downstairs lights\n- 5: bathroom and "
             "shower\n- 6: upstairs sockets\n- 7: garage\n\nThe RCD trips when the outdoor socket gets wet; unplug "
             "whatever is outside first, then reset."},
    {"path": "Home/Bin days.md",
     "front": {"tags": ["home"]},
     "body": "General waste (black) every other Monday, recycling (blue) on the alternate Mondays. Garden waste "
             "(brown) every other Thursday from March to November, needs the yearly sticker. Put bins out the "
             "night before; collection from 6 am."},
    {"path": "Home/Emergency info.md",
     "front": {"tags": ["home"]},
     "body": "- Water stopcock: under the kitchen sink, behind the bleach\n- Gas meter and shut-off: outside, "
             "left of the front door, key on the hook inside\n- Electricity: see [[Fuse box]]\n- Gas emergency "
             "number is on the meter cabinet\n- First aid kit: bathroom cabinet, top shelf"},
    # -- work -----------------------------------------------------------------------------------
    {"path": "Work/1-1 with Lena.md",
     "front": {"date": "2026-02-09", "tags": ["work", "meeting"]},
     "body": "- Lena wants to lead the migration project, agreed in principle\n- Her concern: too many meetings "
             "on Tuesdays, move the standup\n- Promotion case: collect three examples of design docs she wrote\n"
             "- Next 1-1 in two weeks\n- [ ] ask HR about the training budget"},
    {"path": "Work/Quarterly planning.md",
     "front": {"date": "2026-01-12", "quarter": "Q1 2026", "tags": ["work"]},
     "body": "## Goals\n- Cut API p95 latency from 420 ms to under 250 ms\n- Ship the export feature to all "
             "customers\n- Retire the old billing service\n\n## Risks\n- Two people on parental leave in "
             "February\n- The billing retirement depends on finance signing off the new invoices"},
    {"path": "Work/Onboarding checklist.md",
     "front": {"tags": ["work", "checklist"]},
     "body": "- [ ] laptop ordered a week before the start date\n- [ ] accounts: email, chat, code hosting, "
             "cloud console\n- [ ] buddy assigned\n- [ ] first-week plan shared on day one\n- [ ] starter issue "
             "picked, small and real\n- [ ] 30-day check-in booked"},
    {"path": "Work/Postmortem - API outage.md",
     "front": {"date": "2025-11-04", "severity": "SEV2", "duration": "47 min", "tags": ["work", "incident"]},
     "body": "## What happened\nA config change lowered the database connection pool from 50 to 5; under morning "
             "load requests queued and timed out.\n\n## Why it was not caught\nThe staging environment has a "
             "fraction of production traffic.\n\n## Actions\n- [x] revert and alert on pool saturation\n- [ ] "
             "load test config changes that touch pools\n- [ ] require a second reviewer for production config"},
    {"path": "Work/Dashboard ideas.md",
     "front": {"tags": ["work", "ideas"]},
     "body": "- Error budget burn-down per service, not just a red/green light\n- A deploy marker on every latency "
             "graph\n- Top 5 slowest endpoints this week compared with last week\n- Cost per thousand requests"},
    {"path": "Work/Interview questions.md",
     "front": {"tags": ["work", "hiring"]},
     "body": "- Tell me about a system you designed that you would build differently now\n- How do you decide "
             "something is done?\n- Walk me through debugging a slow endpoint\n- A disagreement with a colleague "
             "and how it ended\n- What do you want to learn in the next year?"},
    # -- health ---------------------------------------------------------------------------------
    {"path": "Health/Running log.md",
     "front": {"tags": ["health", "running"]},
     "body": "| date | km | time | notes |\n|---|---|---|---|\n| 2026-01-04 | 5 | 29:40 | cold, icy paths |\n| "
             "2026-01-11 | 7 | 41:10 | felt good |\n| 2026-01-18 | 8 | 47:55 | calf tight |\n| 2026-02-01 | 10 | "
             "58:30 | first 10 km this year |"},
    {"path": "Health/Physio exercises.md",
     "front": {"from": "physio, January 2026", "tags": ["health"]},
     "body": "- Clamshells: 3 x 15 each side, band around the knees\n- Glute bridges: 3 x 12, hold 2 s at the top\n"
             "- Single-leg balance on a cushion: 3 x 30 s, eyes closed for the last set\n- Step-downs from a low "
             "step: 3 x 10, knee tracking over the second toe\n- Calf raises: 3 x 15, slow on the way down\n- Wall "
             "sit: 3 x 30 s\n- Hamstring stretch: hold 30 s, no bouncing\n- Ice after running if the knee is "
             "puffy, 10 minutes"},
    {"path": "Health/Vaccinations.md",
     "front": {"tags": ["health"]},
     "body": "- Tetanus booster: 2019, next due 2029\n- Hepatitis A: two doses, 2022 and 2023 (before Kyoto)\n- "
             "Flu: every autumn at the pharmacy\n- Yellow fever: not needed so far"},
    # -- learning -------------------------------------------------------------------------------
    {"path": "Learning/Git cheatsheet.md",
     "front": {"tags": ["learning", "code"]},
     "body": "- Undo the last commit but keep the changes: git reset --soft HEAD~1\n- See what changed in a "
             "commit: git show <hash>\n- Stash with a message: git stash push -m 'wip'\n- Find the commit that "
             "broke something: git bisect start, git bisect bad, git bisect good <hash>\n- Rename a branch: git "
             "branch -m old new\n- Delete a remote branch: git push origin --delete name\n- Who last changed a "
             "line: git blame -L 10,20 file"},
    {"path": "Learning/Spanish verbs.md",
     "front": {"tags": ["learning", "spanish"]},
     "body": "Ser vs estar: ser for what something is (identity, origin, time), estar for states and location. "
             "Preterite for finished actions (fui, comí), imperfect for background and habits (iba, comía). "
             "Irregular preterites to drill: tener - tuve, hacer - hice, poder - pude, decir - dije."},
    {"path": "Learning/Photography basics.md",
     "front": {"tags": ["learning", "photo"]},
     "body": "## Exposure\nAperture (f-number) controls depth of field; shutter speed controls motion blur; ISO "
             "controls sensitivity and noise. One stop more on one needs one stop less on another.\n\n## Rules "
             "of thumb\n- Handheld: shutter at least 1/focal length\n- Sunny 16: f/16 at 1/ISO in bright sun\n- "
             "Expose for the highlights on digital"},
    {"path": "Learning/Knots.md",
     "front": {"tags": ["learning", "outdoors"]},
     "body": "- Bowline: a fixed loop that does not slip or jam, easy to untie after load; rescue and mooring\n- "
             "Clove hitch: quick attachment to a post, can slip under varying load\n- Figure-eight: stopper knot, "
             "or a loop for climbing harnesses\n- Trucker's hitch: tightening a load down on a roof rack\n- "
             "Sheet bend: joining two ropes of different thickness"},
    # -- people ---------------------------------------------------------------------------------
    {"path": "People/Grandma Rosa.md",
     "front": {"birthday": "17 May", "tags": ["people", "family"]},
     "body": "Lives in Bologna. Calls on Sunday afternoons. Loves crossword puzzles and marzipan; do not send "
             "flowers, she thinks cut flowers are a waste. Her banana bread recipe is in [[Banana bread]]."},
    {"path": "People/Ahmed Karimi.md",
     "front": {"met": "2025-09-18", "where": "PyCon in Lisbon", "tags": ["people", "work"]},
     "body": "Runs a data engineering team at a shipping company in Rotterdam. Interested in our export "
             "feature. Likes climbing. Said he'd send the paper on columnar compression."},
    # -- misc -----------------------------------------------------------------------------------
    {"path": "Readme.md",
     "front": {},
     "body": "How this vault is organised:\n\n- One folder per area (Home, Work, Trips, Recipes, ...)\n- Daily "
             "notes in Journal/, named by date\n- Web clippings in Clippings/, untouched\n- Tags only for type "
             "(book, checklist, boardgame), not for topics\n- Anything unsorted goes to [[Inbox]] and is filed on "
             "Sundays"},
    {"path": "Inbox.md",
     "front": {},
     "body": "- look up the opening hours of the recycling centre\n- book the chimney sweep\n- idea: a shelf above "
             "the desk for the printer\n- find the podcast Jonas mentioned about sleep"},
    {"path": "Gift ideas.md",
     "front": {"tags": ["checklist"]},
     "body": "- [ ] Jonas: a good chef's knife, or a pasta machine\n- [ ] Grandma Rosa: a big crossword book and "
             "marzipan from the deli\n- [x] Mia: the watercolour set\n- [ ] Dad: a bird feeder camera"},
    {"path": "Quotes.md",
     "front": {"tags": ["quotes"]},
     "body": "> The best time to plant a tree was twenty years ago. The second best time is now.\n\n> A ship in "
             "harbour is safe, but that is not what ships are built for. (John A. Shedd)\n\n> What gets measured "
             "gets managed."},
    # -- garden ---------------------------------------------------------------------------------
    {"path": "Garden/Tomatoes.md",
     "front": {"varieties": "Sungold, San Marzano, Black Krim", "sown": "2025-03-15"},
     "body": "Sow indoors mid-March, plant out after the last frost (mid-May). Pinch out side shoots on cordon "
             "varieties. Feed weekly with tomato feed once the first truss sets. Water at the base, never the "
             "leaves: blight spreads from wet leaves in August."},
    {"path": "Garden/Compost.md",
     "front": {"tags": ["garden"]},
     "body": "Browns and greens about half and half by volume. Greens: vegetable peelings, grass clippings, "
             "coffee grounds. Browns: cardboard, dry leaves, straw. Turn every few weeks. Ready in 6-12 months "
             "when dark and crumbly. No meat, dairy or cooked food (rats)."},
    {"path": "Garden/Sowing calendar.md",
     "front": {"tags": ["garden"]},
     "body": "- January: order seeds, chit seed potatoes\n- February: sow chillies and peppers indoors, they're "
             "slow\n- March: tomatoes indoors; broad beans and peas outside under fleece\n- April: carrots, "
             "beetroot, lettuce outside; plant potatoes\n- May: courgettes and squash indoors early, out after the "
             "frost; runner beans direct\n- June: succession sow lettuce every three weeks\n- July: sow kale and "
             "winter spinach\n- August: garlic orders, save seeds\n- September: plant garlic and overwintering "
             "onions\n- October: clear beds, mulch\n- November: plant bare-root fruit trees"},
    # -- finance --------------------------------------------------------------------------------
    {"path": "Finance/Tax return 2025.md",
     "front": {"due": "2026-01-31", "status": "filed", "tags": ["finance", "checklist"]},
     "body": "- [x] P60 from work\n- [x] freelance invoices total\n- [x] pension contributions statement\n- [x] "
             "charity donations (Gift Aid)\n- [x] filed online on 2026-01-20, reference in the email folder"},
    {"path": "Finance/Subscriptions.md",
     "front": {"reviewed": "2026-01-05"},
     "body": "- Music streaming: 11.99 monthly, shared family plan\n- Cloud storage 2 TB: 8.99 monthly\n- Gym: "
             "34 monthly, cancel needs 30 days' notice\n- Newspaper: 9 monthly, cancelled in February\n- Video "
             "streaming: 10.99, paused over summer"},
    # -- car ------------------------------------------------------------------------------------
    {"path": "Car/Tyre pressures.md",
     "front": {"tags": ["car"]},
     "body": "Front 2.3 bar (33 psi), rear 2.1 bar (30 psi) normally; with a full load or a roof box 2.6 front "
             "and 2.9 rear. The sticker is inside the driver's door frame. Check cold, once a month."},
    {"path": "Car/Winter kit.md",
     "front": {"tags": ["car", "checklist"]},
     "body": "- [ ] ice scraper and de-icer\n- [ ] blanket and a warm hat\n- [ ] torch\n- [ ] jump leads\n- [ ] "
             "a small shovel\n- [ ] phone cable in the glovebox\n- [ ] screenwash rated to -15"},
    # -- clippings ------------------------------------------------------------------------------
    {"path": "Clippings/How to fall asleep faster.md",
     "front": {"clipped": "2025-01-04", "source": "a sleep clinic's blog", "tags": ["clipping"]},
     "body": "- Keep the same wake-up time every day, weekends included\n- No screens in the last hour; dim the "
             "lights\n- Cool room, around 18 degrees\n- If awake after 20 minutes, get up and read somewhere else "
             "until sleepy\n- Caffeine has a half-life of about five hours: none after noon"},
    {"path": "Clippings/The two-minute rule.md",
     "front": {"clipped": "2024-06-30", "tags": ["clipping", "productivity"]},
     "body": "If a task takes less than two minutes, do it now instead of writing it down. For a new habit, "
             "scale it down to a version that takes two minutes: 'read before bed' becomes 'read one page'."},
    {"path": "Clippings/Why bread goes stale.md",
     "front": {"published": "2019-11-02", "clipped": "2025-03-10", "tags": ["clipping", "food"]},
     "body": "Staling is not mainly drying out: the starch recrystallises (retrogradation) after baking, which "
             "makes the crumb firm. It happens fastest at fridge temperature, so bread stales faster in the "
             "fridge than on the counter. Freezing stops it; a few minutes in a hot oven reverses it for a while."},
    # -- projects -------------------------------------------------------------------------------
    {"path": "Projects/Bookshelf build.md",
     "front": {"status": "done", "finished": "2025-04-27", "wood": "birch plywood 18 mm"},
     "body": "## Cut list\n- 2 sides 1800 x 300\n- 5 shelves 764 x 290\n- back panel 1800 x 800, 6 mm\n\n## "
             "Notes\n- Dados 6 mm deep with the router, shelves glued and pinned\n- Oiled with hardwax oil, two "
             "coats\n- Anchored to the wall with two brackets"},
    {"path": "Projects/Home server.md",
     "front": {"status": "running", "tags": ["project", "code"]},
     "body": "Old ThinkCentre with 16 GB RAM and two 4 TB drives in a mirror. Runs Jellyfin, Nextcloud and "
             "nightly backups to a cloud bucket with restic. Static IP 192.168.1.20. Updates on the first Sunday "
             "of the month."},
    {"path": "Projects/Wedding speech.md",
     "front": {"event": "Jonas and Mia's wedding", "date": "2025-08-16"},
     "body": "- Open with the camping trip where the tent blew away\n- How they met: the pub quiz, team name "
             "'Quizteama Aguilera'\n- Keep it under five minutes\n- End with a toast to the two of them\n- Don't "
             "mention the ex"},
    # -- journal --------------------------------------------------------------------------------
    {"path": "Journal/2026-01-01.md",
     "front": {"date": "2026-01-01", "tags": ["journal"]},
     "body": "Quiet start to the year. Long walk along the river with Jonas, pancakes after. Intentions: run a "
             "half marathon, read twelve books, call Grandma Rosa every week."},
    {"path": "Journal/2026-02-14.md",
     "front": {"date": "2026-02-14", "tags": ["journal"]},
     "body": "Dinner at the Georgian place, khachapuri was excellent. The boiler lost pressure again in the "
             "morning; topped it up to 1.3 bar. Booked the tax appointment."},
    # -- music and films ------------------------------------------------------------------------
    {"path": "Music/Guitar chords.md",
     "front": {"tags": ["music"]},
     "body": "- G: 320003\n- C: x32010\n- D: xx0232\n- Em: 022000\n- Am: x02210\n- F (easy): xx3211\n\nWonderwall "
             "capo 2: Em7 G Dsus4 A7sus4."},
    {"path": "Movies/Watchlist.md",
     "front": {"tags": ["checklist", "film"]},
     "body": "- [ ] Perfect Days\n- [x] Past Lives\n- [ ] The Zone of Interest\n- [ ] Aftersun\n- [ ] Paris, "
             "Texas\n- [ ] Spirited Away (again, with Mia)"},
    # -- more everyday notes --------------------------------------------------------------------
    {"path": "Home/Moving checklist.md",
     "front": {"created": "2025-05-02", "tags": ["home", "checklist"]},
     "body": "- [ ] give notice to the landlord (two months)\n- [ ] book the van\n- [ ] redirect post\n- [ ] "
             "update address at the bank, doctor, employer\n- [ ] meter readings on the day\n- [ ] deep clean for "
             "the deposit"},
    {"path": "Health/Sleep.md",
     "front": {"tags": ["health"]},
     "body": "Average 6 h 40 min over January according to the watch. Worse on nights after late screens. Trying: "
             "lights off by 23:00, no coffee after 2 pm, reading fiction in bed. See [[How to fall asleep faster]]."},
    {"path": "Learning/Excel formulas.md",
     "front": {"tags": ["learning", "spreadsheets"]},
     "body": "- XLOOKUP(value, lookup_range, return_range, \"not found\") replaces VLOOKUP\n- SUMIFS(sum_range, "
             "criteria_range, criteria): totals by category\n- TEXT(A2, \"yyyy-mm\") for month keys\n- UNIQUE and "
             "FILTER for dynamic lists\n- Ctrl+Shift+L toggles filters"},
    {"path": "Recipes/Weeknight dinners.md",
     "front": {"tags": ["recipes", "ideas"]},
     "body": "- Pasta with tuna, capers and lemon\n- Egg fried rice with frozen peas\n- Halloumi wraps with "
             "slaw\n- Sheet-pan gnocchi with peppers and sausages\n- Miso soup with tofu and noodles\n- "
             "[[Red lentil soup]] from the freezer"},
    {"path": "Trips/Camping gear.md",
     "front": {"tags": ["travel", "outdoors", "checklist"]},
     "body": "- [ ] tent, pegs, mallet\n- [ ] sleeping bags rated to 5 degrees\n- [ ] mats\n- [ ] stove, gas, "
             "lighter\n- [ ] head torches\n- [ ] water filter\n- [ ] trowel and toilet paper"},
]

# Questions written for the vault; each row's ``gold`` is a note's path.
NOTE_QUESTIONS = [
    # by a front matter value
    {"id": "fm-servings-8", "kind": "front", "gold": "Recipes/Banana bread.md", "text": "Which recipe serves 8?"},
    {"id": "fm-forster", "kind": "front", "gold": "Books/The Machine Stops.md",
     "text": "What did E. M. Forster write that I made a note on?"},
    {"id": "fm-rating-5", "kind": "front", "gold": "Books/Piranesi.md", "text": "Which book did I rate 5?"},
    {"id": "fm-start-may", "kind": "front", "gold": "Trips/Scotland road trip.md",
     "text": "Which trip started on 20 May 2025?"},
    {"id": "fm-boiler-model", "kind": "front", "gold": "Home/Boiler.md", "text": "What model is the boiler?"},
    {"id": "fm-hydration", "kind": "front", "gold": "Recipes/Pizza dough.md", "text": "What hydration is my pizza dough?"},
    {"id": "fm-severity", "kind": "front", "gold": "Work/Postmortem - API outage.md",
     "text": "How long did the SEV2 outage last?"},
    {"id": "fm-grandma-birthday", "kind": "front", "gold": "People/Grandma Rosa.md",
     "text": "When is Grandma Rosa's birthday?"},
    {"id": "fm-met-pycon", "kind": "front", "gold": "People/Ahmed Karimi.md", "text": "Who did I meet at PyCon in Lisbon?"},
    {"id": "fm-tomato-varieties", "kind": "front", "gold": "Garden/Tomatoes.md",
     "text": "Which tomato varieties did I grow?"},
    {"id": "fm-quarter", "kind": "front", "gold": "Work/Quarterly planning.md", "text": "What are the goals for Q1 2026?"},
    {"id": "fm-wood", "kind": "front", "gold": "Projects/Bookshelf build.md",
     "text": "What wood did I use for the bookshelf?"},
    {"id": "fm-fuse-location", "kind": "front", "gold": "Home/Fuse box.md", "text": "Where is the fuse box?"},
    {"id": "fm-players-catan", "kind": "front", "gold": "Games/Catan.md",
     "text": "Which board game is for 3-4 players and takes 90 minutes?"},
    # impersonal questions
    {"id": "imp-lost-object", "kind": "impersonal", "gold": "Home/Where things hide.md",
     "text": "Where is a lost object usually hiding?"},
    {"id": "imp-fall-asleep", "kind": "impersonal", "gold": "Clippings/How to fall asleep faster.md",
     "text": "How can you fall asleep faster?"},
    {"id": "imp-stale", "kind": "impersonal", "gold": "Clippings/Why bread goes stale.md",
     "text": "Why does bread go stale faster in the fridge?"},
    {"id": "imp-bowline", "kind": "impersonal", "gold": "Learning/Knots.md", "text": "What is a bowline knot good for?"},
    {"id": "imp-compost", "kind": "impersonal", "gold": "Garden/Compost.md", "text": "How long does compost take to be ready?"},
    {"id": "imp-two-minutes", "kind": "impersonal", "gold": "Clippings/The two-minute rule.md",
     "text": "How do you start a new habit that sticks?"},
    {"id": "imp-ser-estar", "kind": "impersonal", "gold": "Learning/Spanish verbs.md",
     "text": "When do you use ser and when estar?"},
    {"id": "imp-aperture", "kind": "impersonal", "gold": "Learning/Photography basics.md",
     "text": "What does the aperture control in a photo?"},
    {"id": "imp-leverage", "kind": "impersonal", "gold": "Books/Thinking in Systems.md",
     "text": "What are the most powerful leverage points in a system?"},
    {"id": "imp-assassin", "kind": "impersonal", "gold": "Games/Codenames.md",
     "text": "What happens if a team picks the assassin card?"},
    # keyword queries
    {"id": "kw-lost-object", "kind": "keyword", "gold": "Home/Where things hide.md", "text": "lost object arm's reach"},
    {"id": "kw-shakshuka", "kind": "keyword", "gold": "Recipes/Shakshuka.md", "text": "eggs cumin paprika feta"},
    {"id": "kw-boiler", "kind": "keyword", "gold": "Home/Boiler.md", "text": "boiler pressure filling loop"},
    {"id": "kw-robber", "kind": "keyword", "gold": "Games/Catan.md", "text": "friendly robber house rule"},
    {"id": "kw-stopcock", "kind": "keyword", "gold": "Home/Emergency info.md", "text": "stopcock"},
    {"id": "kw-restic", "kind": "keyword", "gold": "Projects/Home server.md", "text": "restic backups jellyfin"},
    {"id": "kw-bisect", "kind": "keyword", "gold": "Learning/Git cheatsheet.md", "text": "git bisect"},
    {"id": "kw-pool", "kind": "keyword", "gold": "Work/Postmortem - API outage.md", "text": "connection pool outage"},
    {"id": "kw-tyre", "kind": "keyword", "gold": "Car/Tyre pressures.md", "text": "tyre psi roof box"},
    {"id": "kw-pasteis", "kind": "keyword", "gold": "Trips/Lisbon long weekend.md", "text": "pastéis de Belém"},
    {"id": "kw-wonderwall", "kind": "keyword", "gold": "Music/Guitar chords.md", "text": "wonderwall capo"},
    # one bullet of a long note
    {"id": "bul-glasses", "kind": "bullet", "gold": "Home/Where things hide.md", "text": "Where do my glasses usually end up?"},
    {"id": "bul-passport-drawer", "kind": "bullet", "gold": "Home/Where things hide.md", "text": "Where do I keep my passport?"},
    {"id": "bul-batteries", "kind": "bullet", "gold": "Home/Where things hide.md", "text": "Where are the spare batteries?"},
    {"id": "bul-calathea", "kind": "bullet", "gold": "Home/Plant care.md", "text": "What water does the calathea need?"},
    {"id": "bul-orchid", "kind": "bullet", "gold": "Home/Plant care.md", "text": "How often should I water the orchid?"},
    {"id": "bul-wall-sit", "kind": "bullet", "gold": "Health/Physio exercises.md", "text": "How long is the wall sit?"},
    {"id": "bul-clamshells", "kind": "bullet", "gold": "Health/Physio exercises.md", "text": "How many clamshells do I do?"},
    {"id": "bul-garlic", "kind": "bullet", "gold": "Garden/Sowing calendar.md", "text": "When do I plant garlic?"},
    {"id": "bul-chillies", "kind": "bullet", "gold": "Garden/Sowing calendar.md", "text": "When should chillies be sown?"},
    {"id": "bul-soft-reset", "kind": "bullet", "gold": "Learning/Git cheatsheet.md",
     "text": "How do I undo the last commit but keep my changes?"},
    {"id": "bul-gym-notice", "kind": "bullet", "gold": "Finance/Subscriptions.md",
     "text": "How much notice does the gym need to cancel?"},
    {"id": "bul-tetanus", "kind": "bullet", "gold": "Health/Vaccinations.md", "text": "When is my next tetanus booster due?"},
    {"id": "bul-storr", "kind": "bullet", "gold": "Trips/Scotland road trip.md",
     "text": "How long is the walk up to the Old Man of Storr?"},
    {"id": "bul-day4", "kind": "bullet", "gold": "Trips/Kyoto 2023.md", "text": "Which day did we go to Nara?"},
    {"id": "bul-speech-length", "kind": "bullet", "gold": "Projects/Wedding speech.md",
     "text": "How long should the wedding speech be?"},
    {"id": "bul-sweetgrass", "kind": "bullet", "gold": "Books/Reading list 2026.md",
     "text": "Have I read Braiding Sweetgrass yet?"},
]

NOTES_OFFTOPIC = [
    "What's the capital of Kazakhstan?", "Who won the Tour de France in 2019?", "How does a jet engine work?",
    "What's my car's registration number?", "What is my doctor's name?", "How do I file a patent?",
    "What's the population of Canada?", "What's my mortgage rate?", "Explain quantum entanglement.",
    "Which airline do I fly most?",
]
